/**
 * A scripted model: replays a scenario file of model turns through the AI SDK's LanguageModel
 * interface (spec v3), offline and deterministic. It is honest: a conversation that departs from
 * the script fails with a non-retryable ScriptMismatch naming the turn and what differed, instead
 * of answering something plausible.
 *
 * The turn is the number of assistant messages already in the prompt, not a counter in memory,
 * so a retried activity or another worker replays the same turn.
 */
import { readFileSync } from 'node:fs';
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3GenerateResult,
  LanguageModelV3Message,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
  LanguageModelV3ToolResultOutput,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ErrorTypes, permanent } from '../errors/application-failures';
import { SCENARIO_FILE, realPath } from '../plan-format/scenarios';

const toolCallSchema = z.strictObject({
  name: z.string().min(1),
  args: z.record(z.string(), z.unknown()).default({}),
  /** Defaults to `call_<turn>_<index>`, so ids are stable across replays. */
  id: z.string().min(1).optional(),
});

const turnSchema = z.strictObject({
  expect: z
    .strictObject({
      /** Role of the last message of the prompt. */
      lastRole: z.enum(['user', 'assistant', 'tool']).optional(),
      /** A substring of the last message's text (a tool message's text is its results as JSON). */
      lastContains: z.string().optional(),
      /** The exact set of tool names offered, in any order. */
      tools: z.array(z.string()).optional(),
    })
    .default({}),
  reply: z
    .strictObject({
      text: z.string().optional(),
      toolCalls: z.array(toolCallSchema).default([]),
      usage: z.strictObject({ inputTokens: z.int().nonnegative(), outputTokens: z.int().nonnegative() }).default({ inputTokens: 0, outputTokens: 0 }),
      finishReason: z.enum(['stop', 'length', 'content-filter', 'tool-calls', 'other']).optional(),
    })
    .refine((reply) => reply.text !== undefined || reply.toolCalls.length > 0, 'a reply needs text or toolCalls'),
});

export const scenarioSchema = z.strictObject({
  turns: z.array(turnSchema).min(1),
  /**
   * Start the script again after its last turn (turn n+1 is turn 1): for conversations whose
   * earlier messages leave the context (sessions), where the turn count no longer grows.
   */
  cycle: z.boolean().default(false),
});

export type Scenario = z.infer<typeof scenarioSchema>;
export type ScriptedTurn = Scenario['turns'][number];

/** Parses a scenario (YAML or JSON text); errors name the path (`turns[1].reply.toolCalls[0].name`). */
/**
 * A scenario from its text. Its errors say where, never what: a file that is not a scenario (a
 * path gone wrong) must not have its content quoted into an error, a log or a run's history.
 */
export function parseScenario(text: string, source: string): Scenario {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    const at = (err as { linePos?: { line: number; col: number }[] }).linePos?.[0];
    throw permanent(ErrorTypes.ModelConfigInvalid, `scenario ${source}: not valid YAML or JSON${at ? ` (line ${at.line}, column ${at.col})` : ''}`);
  }
  const parsed = scenarioSchema.safeParse(doc);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 5).map((issue) => `${formatPath(issue.path) || 'the file'}: ${describeIssue(issue)}`);
    throw permanent(ErrorTypes.ModelConfigInvalid, `scenario ${source}: ${issues.join('; ')}`);
  }
  return parsed.data;
}

/** A schema problem in words of the schema, not of the file (zod names types and expected values, never the input); field names only when they look like field names. */
function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'unrecognized_keys') {
    const names = issue.keys.filter((key) => /^[A-Za-z_][\w-]{0,40}$/.test(key));
    return names.length === issue.keys.length ? `unknown field ${names.map((k) => `"${k}"`).join(', ')}` : `${issue.keys.length} unknown field(s)`;
  }
  return issue.message;
}

/** Scenarios parsed, by path, with the text they came from: a turn re-reads the file but parses only what changed. */
const parsedScenarios = new Map<string, { text: string; scenario: Scenario }>();
const MAX_PARSED_SCENARIOS = 64;

export function loadScenario(path: string): Scenario {
  // Plans are checked for this; a run started another way (a hand-made start) is checked here.
  if (!SCENARIO_FILE.test(realPath(path))) throw permanent(ErrorTypes.ModelConfigInvalid, `scenario ${path}: a scenario is a .yaml, .yml or .json file`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw permanent(ErrorTypes.ModelConfigInvalid, `scenario ${path}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  // Parsing a long scenario on every turn held the worker's event loop for tens of milliseconds.
  const known = parsedScenarios.get(path);
  if (known?.text === text) return known.scenario;
  const scenario = parseScenario(text, path);
  parsedScenarios.delete(path);
  parsedScenarios.set(path, { text, scenario });
  if (parsedScenarios.size > MAX_PARSED_SCENARIOS) parsedScenarios.delete(parsedScenarios.keys().next().value as string);
  return scenario;
}

export class ScriptedModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3';
  readonly provider = 'scripted';
  readonly supportedUrls = {};

  constructor(
    private readonly scenario: Scenario,
    readonly modelId: string,
  ) {}

  async doGenerate(options: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> {
    const { index, turn } = this.turnFor(options);
    return { content: contentOf(turn, index), finishReason: finishOf(turn), usage: usageOf(turn), warnings: [] };
  }

  async doStream(options: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const { content, finishReason, usage } = await this.doGenerate(options);
    const parts: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: [] }];
    for (const part of content) {
      if (part.type === 'text') parts.push({ type: 'text-start', id: 'text' }, { type: 'text-delta', id: 'text', delta: part.text }, { type: 'text-end', id: 'text' });
      else if (part.type === 'tool-call') parts.push(part);
    }
    parts.push({ type: 'finish', finishReason, usage });
    return {
      stream: new ReadableStream({
        start(controller) {
          parts.forEach((part) => controller.enqueue(part));
          controller.close();
        },
      }),
    };
  }

  /** The turn this prompt is at, after checking the prompt against what the turn expects. */
  private turnFor(options: LanguageModelV3CallOptions): { index: number; turn: ScriptedTurn } {
    const assistants = options.prompt.filter((m) => m.role === 'assistant').length;
    const index = this.scenario.cycle ? assistants % this.scenario.turns.length : assistants;
    const where = `scripted model ${this.modelId}, turn ${index + 1} of ${this.scenario.turns.length}`;
    const turn = this.scenario.turns[index];
    if (!turn) throw permanent(ErrorTypes.ScriptMismatch, `${where}: the script is exhausted (the conversation asked for turn ${index + 1})`);
    const last = options.prompt[options.prompt.length - 1];
    const { lastRole, lastContains, tools } = turn.expect;
    if (lastRole !== undefined && last?.role !== lastRole) {
      throw permanent(ErrorTypes.ScriptMismatch, `${where}: expected the last message from ${lastRole}, got ${last?.role ?? 'no message'}`);
    }
    if (lastContains !== undefined) {
      const text = last ? textOf(last) : '';
      if (!text.includes(lastContains)) {
        throw permanent(ErrorTypes.ScriptMismatch, `${where}: expected the last message to contain ${JSON.stringify(lastContains)}, got ${last?.role ?? 'no'} message ${JSON.stringify(clip(text))}`);
      }
    }
    if (tools !== undefined) {
      const offered = (options.tools ?? []).map((t) => t.name).sort();
      const expected = [...tools].sort();
      if (offered.join('\n') !== expected.join('\n')) {
        throw permanent(ErrorTypes.ScriptMismatch, `${where}: expected tools [${expected.join(', ')}], offered [${offered.join(', ')}]`);
      }
    }
    return { index, turn };
  }
}

function contentOf(turn: ScriptedTurn, index: number): LanguageModelV3Content[] {
  const content: LanguageModelV3Content[] = [];
  if (turn.reply.text !== undefined) content.push({ type: 'text', text: turn.reply.text });
  turn.reply.toolCalls.forEach((call, i) => {
    content.push({ type: 'tool-call', toolCallId: call.id ?? `call_${index + 1}_${i + 1}`, toolName: call.name, input: JSON.stringify(call.args) });
  });
  return content;
}

function finishOf(turn: ScriptedTurn): LanguageModelV3FinishReason {
  const unified = turn.reply.finishReason ?? (turn.reply.toolCalls.length > 0 ? 'tool-calls' : 'stop');
  return { unified, raw: unified };
}

function usageOf(turn: ScriptedTurn): LanguageModelV3Usage {
  const { inputTokens, outputTokens } = turn.reply.usage;
  return {
    inputTokens: { total: inputTokens, noCache: inputTokens, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: outputTokens, text: outputTokens, reasoning: undefined },
  };
}

/** The text a scenario's `lastContains` is matched against. */
function textOf(message: LanguageModelV3Message): string {
  if (message.role === 'system') return message.content;
  return message.content
    .map((part) => {
      if (part.type === 'text') return part.text;
      if (part.type === 'tool-result') return toolOutputText(part.output);
      if (part.type === 'tool-call') return JSON.stringify(part.input);
      return '';
    })
    .join('\n');
}

function toolOutputText(output: LanguageModelV3ToolResultOutput): string {
  if (output.type === 'text' || output.type === 'error-text') return output.value;
  return 'value' in output ? JSON.stringify(output.value) : output.type;
}

function formatPath(path: PropertyKey[]): string {
  return path.reduce<string>((out, key) => (typeof key === 'number' ? `${out}[${key}]` : out ? `${out}.${String(key)}` : String(key)), '') || '(root)';
}

function clip(text: string): string {
  return text.length > 120 ? `${text.slice(0, 120)}...` : text;
}
