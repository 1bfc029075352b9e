/**
 * Does a final answer look like a tool call that nothing read? Small models served without tool
 * calling (or with the wrong `toolCalls` mode) write their calls as text, and an agent that took
 * that text for its answer would report success for work it never did. Pure: text in, verdict out.
 */
import { parse as relaxedParse } from '@ai-sdk-tool/parser';
import type { ToolCallMode } from './tool-call-modes';

/** The mode that reads the style the call was written in. */
export type WrittenStyle = Exclude<ToolCallMode, 'native' | 'required'>;

export interface UnparsedToolCall {
  /** The offered tool the text names. */
  tool: string;
  /** How it was written: `json` (an object, fenced or in `<tool_call>` tags), `xml` (a tag named for the tool), `qwen` (`<function=…>`). */
  style: WrittenStyle;
}

/** JSON candidates looked at in one answer, and their size: an answer can be megabytes. */
const MAX_CANDIDATES = 32;
const MAX_CANDIDATE_CHARS = 64 * 1024;

/** The first tool call written as text in `text` that names one of `tools`, if any. */
export function findUnparsedToolCall(text: string, tools: readonly string[]): UnparsedToolCall | undefined {
  if (tools.length === 0 || text.trim() === '') return undefined;
  const offered = new Set(tools);
  // Qwen3-Coder's `<function=name>` first: it sits inside `<tool_call>` tags too.
  for (const match of text.matchAll(/<function=\s*["']?([A-Za-z0-9_.:-]+)/g)) {
    if (offered.has(match[1])) return { tool: match[1], style: 'qwen' };
  }
  const json = jsonCall(text, offered);
  if (json) return { tool: json, style: 'json' };
  // `<tool_call>` naming a tool in JSON that does not parse (cut short by the token limit, say).
  for (const match of text.matchAll(/<tool_call>\s*\{\s*["']?name["']?\s*:\s*["']([^"']+)["']/g)) {
    if (offered.has(match[1])) return { tool: match[1], style: 'json' };
  }
  for (const match of text.matchAll(/<([A-Za-z_][A-Za-z0-9_.:-]*)[\s/>]/g)) {
    if (offered.has(match[1])) return { tool: match[1], style: 'xml' };
  }
  // `<invoke name="fs_read">` and `<tool_call name="fs_read">`: a tag that names a tool in an attribute.
  for (const match of text.matchAll(/<(?:invoke|tool_call|tool|function_call)\s+name=["']([^"']+)["']/g)) {
    if (offered.has(match[1])) return { tool: match[1], style: 'xml' };
  }
  return undefined;
}

/** The tool named by a JSON call in the text: a whole-answer object, a fenced block, `<tool_call>` contents or an object among words. */
function jsonCall(text: string, offered: Set<string>): string | undefined {
  let looked = 0;
  for (const candidate of jsonCandidates(text)) {
    if (++looked > MAX_CANDIDATES) return undefined;
    const value = parseJson(candidate);
    const name = value === undefined ? undefined : calledTool(value, offered);
    if (name) return name;
  }
  return undefined;
}

function* jsonCandidates(text: string): Generator<string> {
  for (const match of text.matchAll(/```[a-zA-Z]*\s*\n?([\s\S]*?)```/g)) yield match[1];
  for (const match of text.matchAll(/<tool_call>([\s\S]*?)(?:<\/tool_call>|$)/g)) yield match[1];
  yield* balancedObjects(text);
}

/** `{…}` and `[…]` spans whose brackets balance outside strings, outermost first. */
function* balancedObjects(text: string): Generator<string> {
  let depth = 0;
  let start = -1;
  let inString = false;
  let escaped = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (c === '\\') escaped = true;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"' && depth > 0) inString = true;
    else if (c === '{' || c === '[') {
      if (depth === 0) start = i;
      depth++;
    } else if ((c === '}' || c === ']') && depth > 0 && --depth === 0) {
      if (i - start < MAX_CANDIDATE_CHARS) yield text.slice(start, i + 1);
    }
  }
}

function parseJson(candidate: string): unknown {
  const trimmed = candidate.trim();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return undefined;
  if (trimmed.length > MAX_CANDIDATE_CHARS) return undefined;
  try {
    return JSON.parse(trimmed);
  } catch {
    // Small models write JSON loosely (single quotes, trailing commas): the parser library's relaxed reader.
    try {
      return relaxedParse(trimmed);
    } catch {
      return undefined;
    }
  }
}

const NAME_KEYS = ['name', 'tool', 'tool_name', 'function'];
const ARGUMENT_KEYS = ['arguments', 'parameters', 'args', 'input'];

/** `{"name": tool, "arguments": …}` and its kin, OpenAI's `{"function": {"name", "arguments"}}`, `tool_calls` lists and arrays of calls. */
function calledTool(value: unknown, offered: Set<string>): string | undefined {
  if (Array.isArray(value)) {
    for (const item of value.slice(0, MAX_CANDIDATES)) {
      const name = calledTool(item, offered);
      if (name) return name;
    }
    return undefined;
  }
  if (!isObject(value)) return undefined;
  if (Array.isArray(value.tool_calls)) return calledTool(value.tool_calls, offered);
  if (isObject(value.function)) return calledTool(value.function, offered);
  const name = NAME_KEYS.map((key) => value[key]).find((v): v is string => typeof v === 'string' && offered.has(v));
  return name !== undefined && ARGUMENT_KEYS.some((key) => key in value) ? name : undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
