/**
 * How a model calls tools (`models.compatible.<endpoint>.toolCalls`). `native` is the provider's
 * own tool calling; `required` the same with every reply a call (model-turn.ts adds the `finish`
 * tool that answers, and asks for tool_choice: required). The others are for models served without it (llama.cpp's server, Ollama, vLLM
 * without a tool parser): the tools go into the system prompt, and the calls the model writes as
 * text are read back into tool calls by `@ai-sdk-tool/parser`'s middleware, streamed or not:
 *  - json: `<tool_call>{"name": …, "arguments": …}</tool_call>` (Hermes, Qwen 2.5), and the same
 *    object in a ```json block, which small models write when they forget the tags;
 *  - xml: `<fs_read><path>notes.txt</path></fs_read>` (morphXml);
 *  - qwen: `<tool_call><function=fs_read><parameter=path>…` (Qwen3-Coder).
 */
import {
  decodeOriginalToolsFromProviderOptions,
  hermesProtocol,
  hermesToolMiddleware,
  mergeToolCallMiddlewareOptions,
  morphXmlToolMiddleware,
  parse as relaxedParse,
  qwen3CoderToolMiddleware,
} from '@ai-sdk-tool/parser';
import type { LanguageModelV3, LanguageModelV3Middleware, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { generateId, wrapLanguageModel } from 'ai';
import type { ToolCallMode } from './config';

export { TOOL_CALL_MODES, type ToolCallMode } from './config';

/** The model, reading its tool calls from its text in `mode` (the model itself for `native`). */
export function withToolCallMode(model: LanguageModelV3, mode: ToolCallMode): LanguageModelV3 {
  if (mode === 'native') return model;
  return wrapLanguageModel({ model, middleware: mode === 'required' ? requiredMiddleware : MIDDLEWARE[mode] });
}

/**
 * `required` asks for a call twice: `tool_choice: "required"`, and a `response_format` whose JSON
 * Schema is one of the offered calls, `{"name", "arguments"}` (providerBody). A server that honours
 * the first answers with tool calls; one that ignores it but honours the schema (llama.cpp's server
 * in 2026, whose grammar follows the schema) answers with the call as its text, read here.
 */
const requiredMiddleware: LanguageModelV3Middleware = readingLeadingCalls({ specificationVersion: 'v3' }, (options) => (options.params.tools ?? []).map((t) => t.name));

/** Characters of a call's thought under `required`'s schema: a sentence or two, not an essay that uses up the answer's tokens. */
const MAX_THOUGHT_CHARS = 400;

/** The request body's fields for `required`: one call a turn, and the schema of the calls the reply may be. */
export function requiredBody(body: Record<string, unknown>): Record<string, unknown> {
  if (body.tool_choice !== 'required' || !Array.isArray(body.tools)) return body;
  // A thought first: a small model held to a call from its first token has no room to think otherwise.
  const thought = { type: 'string', maxLength: MAX_THOUGHT_CHARS, description: 'what you know so far and why this call is next, in a sentence or two' };
  const calls = (body.tools as { function: { name: string; parameters?: unknown } }[]).map((t) => ({
    type: 'object',
    properties: { thought, name: { const: t.function.name }, arguments: t.function.parameters ?? { type: 'object' } },
    required: ['thought', 'name', 'arguments'],
    additionalProperties: false,
  }));
  return { ...body, parallel_tool_calls: false, response_format: { type: 'json_schema', json_schema: { name: 'tool_call', schema: { oneOf: calls } } } };
}

/**
 * The library's middleware with cadre's settings. Markup that does not parse stays in the
 * answer's text (the library drops it by default): no call may vanish silently, and the agent
 * loop's guard reads what is left. The tools' system prompt goes first when there was none (the
 * library appends it): many local models' chat templates refuse a system message anywhere else.
 * A turn offered no tools (a decision, a session's summary) goes to the model as it
 * is: the library would still tell the model how to call the tools it has, "none".
 */
function cadreSettings(middleware: LanguageModelV3Middleware): LanguageModelV3Middleware {
  type Wrap<K extends 'wrapStream' | 'wrapGenerate'> = NonNullable<LanguageModelV3Middleware[K]>;
  const wrapStream = middleware.wrapStream as Wrap<'wrapStream'>;
  const wrapGenerate = middleware.wrapGenerate as Wrap<'wrapGenerate'>;
  // After transformParams the tools travel in the provider options, where the library reads them.
  const offered = (options: { params: { providerOptions?: Parameters<typeof decodeOriginalToolsFromProviderOptions>[0] } }) =>
    decodeOriginalToolsFromProviderOptions(options.params.providerOptions).length > 0;
  return {
    ...middleware,
    wrapStream: (options) => (offered(options) ? wrapStream(options) : options.doStream()),
    wrapGenerate: (options) => (offered(options) ? wrapGenerate(options) : options.doGenerate()),
    transformParams: async (options) => {
      if (!options.params.tools?.length) return options.params;
      const params = (await middleware.transformParams?.(options)) ?? options.params;
      const last = params.prompt.at(-1);
      const prompt = last?.role === 'system' && params.prompt.length > 1 ? [last, ...params.prompt.slice(0, -1)] : params.prompt;
      return { ...params, prompt, providerOptions: mergeToolCallMiddlewareOptions(params.providerOptions, { emitRawToolCallTextOnError: true }) };
    },
  };
}

/** The library's own parser with ```json fences for delimiters, after the `<tool_call>` one. */
const fenced = hermesProtocol({ toolCallStart: '```json', toolCallEnd: '```' });

/** Hermes, plus ```json blocks (a non-streamed answer's are already read by the library's JSON recovery). */
const jsonMiddleware: LanguageModelV3Middleware = {
  ...hermesToolMiddleware,
  wrapStream: async (options) => {
    const result = await (hermesToolMiddleware.wrapStream as NonNullable<LanguageModelV3Middleware['wrapStream']>)(options);
    const tools = decodeOriginalToolsFromProviderOptions(options.params.providerOptions);
    return { ...result, stream: result.stream.pipeThrough(fenced.createStreamParser({ tools, options: { emitRawToolCallTextOnError: true } })) };
  },
};

/**
 * A mode's middleware that also reads a reply opening with a bare call, `{"name": <an offered tool>,
 * "arguments": {…}}` without tags or fence (Qwen2.5-Coder writes its calls so, often with prose
 * after), in every text mode. A call found by it or the fence turns the finish reason to tool-calls,
 * as the library does for its own.
 */
type WrapStream = NonNullable<LanguageModelV3Middleware['wrapStream']>;

function readingLeadingCalls(
  middleware: LanguageModelV3Middleware,
  offered: (options: Parameters<WrapStream>[0]) => string[] = (options) => decodeOriginalToolsFromProviderOptions(options.params.providerOptions).map((t) => t.name),
): LanguageModelV3Middleware {
  const wrapStream: WrapStream = middleware.wrapStream ?? ((options) => options.doStream());
  return {
    ...middleware,
    wrapStream: async (options) => {
      const result = await wrapStream(options);
      let called = false;
      const stream = result.stream.pipeThrough(leadingCall(new Set(offered(options)))).pipeThrough(
        new TransformStream<Part, Part>({
          transform: (part, controller) => {
            if (part.type === 'tool-call') called = true;
            const stopped = part.type === 'finish' && called && part.finishReason.unified === 'stop';
            controller.enqueue(stopped ? { ...part, finishReason: { ...part.finishReason, unified: 'tool-calls' } } : part);
          },
        }),
      );
      return { ...result, stream };
    },
  };
}

type Part = LanguageModelV3StreamPart;

/** Text held back to see whether it opens with a bare call: a call is short, an answer this long does not open with one. */
const MAX_BARE_CALL_CHARS = 64 * 1024;

/**
 * A reply whose text opens with a bare call object: the text is held back while it may be one,
 * until its first object closes (or the reply ends); a call goes on as a tool call, followed by the
 * text after it. Any other reply streams as it comes, and nothing of a reply is dropped.
 */
export function leadingCall(offered: Set<string>): TransformStream<Part, Part> {
  let state: 'undecided' | 'holding' | 'passing' = 'undecided';
  let held: Part[] = [];
  let text = '';
  let textId: string | undefined;
  const release = (controller: TransformStreamDefaultController<Part>) => {
    for (const part of held) controller.enqueue(part);
    held = [];
    state = 'passing';
  };
  /** The call the text opens with, then the text after it; false when it opens with something else. */
  const decide = (controller: TransformStreamDefaultController<Part>, ended: boolean): boolean => {
    const end = objectEnd(text);
    if (end < 0 && !ended) return false;
    const call = callIn(end < 0 ? text : text.slice(0, end), offered);
    if (!call) {
      release(controller);
      return true;
    }
    const rest = end < 0 ? '' : text.slice(end);
    const opened = held.filter((part) => part.type === 'text-start');
    held = [];
    state = 'passing';
    for (const part of opened) controller.enqueue(part);
    // The call's own thought is the turn's text, said before the call; words after the call follow it.
    const said = [call.thought, rest.trim() === '' ? undefined : rest].filter((part) => part !== undefined).join('\n');
    if (said !== '' && textId !== undefined) controller.enqueue({ type: 'text-delta', id: textId, delta: said });
    controller.enqueue({ type: 'tool-call', toolCallId: generateId(), toolName: call.name, input: JSON.stringify(call.args) });
    return true;
  };
  return new TransformStream<Part, Part>({
    transform: (part, controller) => {
      if (state === 'passing') return controller.enqueue(part);
      if (part.type === 'text-start') return void held.push(part);
      if (part.type === 'text-delta') {
        held.push(part);
        text += part.delta;
        textId = part.id;
        const start = text.trimStart();
        if (start === '') return;
        if (!start.startsWith('{') || text.length > MAX_BARE_CALL_CHARS) return release(controller);
        state = 'holding';
        decide(controller, false);
        return;
      }
      if (part.type === 'text-end' && state === 'undecided') return void held.push(part);
      if (part.type === 'text-end' || part.type === 'finish') {
        if (state === 'holding') decide(controller, true);
        else release(controller);
        return controller.enqueue(part);
      }
      // The parts before the text wait with nothing; anything else (a call parsed by the others, an error) ends the wait.
      if (part.type === 'stream-start' || part.type === 'response-metadata' || part.type === 'raw') return controller.enqueue(part);
      release(controller);
      controller.enqueue(part);
    },
    flush: (controller) => release(controller),
  });
}

/** The index just past the first `{…}` of the text (strings and escapes skipped), or -1 while it is open. */
export function objectEnd(text: string): number {
  let depth = 0;
  let quote: string | undefined;
  for (let i = text.indexOf('{'); i >= 0 && i < text.length; i++) {
    const c = text[i];
    if (quote !== undefined) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i + 1;
  }
  return -1;
}

/** `{"name": tool, "arguments": {…}}`, with a `thought` (required's schema) or without, and nothing else, read as loosely as the library reads calls. */
function callIn(text: string, offered: Set<string>): { name: string; args: Record<string, unknown>; thought?: string } | undefined {
  let value: unknown;
  try {
    value = relaxedParse(text.trim());
  } catch {
    return undefined;
  }
  if (!isRecord(value) || typeof value.name !== 'string' || !offered.has(value.name) || !isRecord(value.arguments)) return undefined;
  if (!Object.keys(value).every((key) => key === 'name' || key === 'arguments' || key === 'thought')) return undefined;
  const thought = typeof value.thought === 'string' && value.thought.trim() !== '' ? value.thought.trim() : undefined;
  return { name: value.name, args: value.arguments, ...(thought !== undefined && { thought }) };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const MIDDLEWARE: Record<Exclude<ToolCallMode, 'native' | 'required'>, LanguageModelV3Middleware> = {
  json: cadreSettings(readingLeadingCalls(jsonMiddleware)),
  xml: cadreSettings(readingLeadingCalls(morphXmlToolMiddleware)),
  qwen: cadreSettings(readingLeadingCalls(qwen3CoderToolMiddleware)),
};
