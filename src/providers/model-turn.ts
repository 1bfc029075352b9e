/**
 * One model call (not a loop): plain JSON in, plain JSON out, so it can be an activity whose
 * input and result sit in workflow history. The caller runs the tools the model asks for. The
 * provider is asked to stream, and a listener hears the text as it comes (the run's stream); the
 * result is the same whole answer either way.
 */
import { type ModelMessage, Output, type ToolSet, streamText, jsonSchema, tool, NoObjectGeneratedError } from 'ai';
import { z } from 'zod';
import type { TokenUsage } from '../protocol/usage';
import { ErrorTypes, permanent, transient } from '../errors/application-failures';
import { type ModelId, type ModelSettings, parseModelId } from './config';
import { classifyProviderError, redact } from './errors';
import { withUniqueCallIds } from './unique-call-ids';
import { compatibleEndpoint, languageModel, toolCallsOf } from './registry';
import { contextTokens, fitToWindow, outputReserve, type Shortened } from './context-window';
import { type WrittenStyle, findUnparsedToolCall } from './unparsed-tool-call';
import { FINISH_TOOL, type OfferedTool, finishTool } from './finish-tool';
import { REQUIRED_GUIDE, requiredTurn, sentBack } from './required-turn';
import { notChanged } from './required-guards';
import { MAX_MUST_CHANGE } from '../protocol/made-no-change';

const jsonObject = z.record(z.string(), z.unknown());
// `error` is what modelTurn said of a call it returned; a caller may send the call back as it got it.
const toolCallSchema = z.strictObject({ id: z.string().min(1), name: z.string().min(1), args: jsonObject, error: z.string().optional() });

const messageSchema = z.discriminatedUnion('role', [
  z.strictObject({ role: z.literal('user'), content: z.string() }),
  z.strictObject({ role: z.literal('assistant'), content: z.string().optional(), toolCalls: z.array(toolCallSchema).optional() }),
  z.strictObject({ role: z.literal('tool'), toolCallId: z.string().min(1), toolName: z.string().min(1), result: z.unknown(), isError: z.boolean().optional() }),
]);

export const modelTurnRequestSchema = z.strictObject({
  /** `provider:model`; without it, CADRE_MODEL or models.default. */
  model: z.string().min(1).optional(),
  system: z.string().optional(),
  messages: z.array(messageSchema).min(1),
  tools: z
    .array(z.strictObject({ name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, _ or - (what providers accept)'), description: z.string().optional(), inputSchema: jsonObject }))
    .refine((tools) => new Set(tools.map((t) => t.name)).size === tools.length, 'tool names must be unique')
    .optional(),
  /** JSON Schema the final answer must match. */
  outputSchema: jsonObject.optional(),
  maxOutputTokens: z.int().positive().optional(),
  /** Whose blob store holds tool results stored outside history (read by the activity before the call). */
  workspace: z.string().min(1).optional(),
  /** The step's task is a change (its `mustChange`: any, or of each file listed): a final answer before it worked is not taken. */
  mustChange: z.union([z.literal(true), z.array(z.string().min(1).max(4096)).min(1).max(MAX_MUST_CHANGE)]).optional(),
});

export type ModelTurnRequest = z.input<typeof modelTurnRequestSchema>;
export type ModelMessageInput = z.infer<typeof messageSchema>;
/**
 * A call the model asked for. `error` says why it cannot be run as asked (a tool that was not
 * offered, arguments that are not a JSON object or do not match the tool's schema): model output
 * is not trusted, and the caller answers such a call with the error as its result instead of running it.
 */
export type ToolCall = z.infer<typeof toolCallSchema>;

export interface ModelTurnResult {
  text?: string;
  /** The final answer parsed and checked against `outputSchema`, when one was given. */
  output?: unknown;
  toolCalls: ToolCall[];
  finishReason: string;
  usage: TokenUsage;
  /**
   * A final answer that looks like a tool call written as text, which nothing read (the agent loop
   * sends one correction, then fails with ToolCallNotParsed): the tool it names, and the fix.
   */
  unparsedToolCall?: { tool: string; style: WrittenStyle; fix: string };
  /**
   * A final answer of a `mustChange` step before its change (the agent loop sends one correction,
   * then fails with AgentMadeNoChange): the files not yet written or changed, none when nothing changed at all.
   */
  notChanged?: string[];
  /**
   * Set by the activity when the turn was asked to stream: the attempt, the characters of text it
   * streamed, and those the model wrote as it streamed (more when the stream showed less).
   */
  streamed?: { attempt: number; chars: number; textChars: number };
  /** Tool results shortened so the conversation fit the model's context (local endpoints). */
  shortened?: Shortened;
  /** USD, when the model has a price (`models.prices`): set by the activity. */
  costUsd?: number;
}

/** Hears a turn as the provider streams it. */
export interface TurnListener {
  textDelta(text: string): void;
}

export async function modelTurn(request: ModelTurnRequest, settings: ModelSettings, signal?: AbortSignal, listener?: TurnListener): Promise<ModelTurnResult> {
  const parsed = modelTurnRequestSchema.safeParse(request);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(request)'}: ${issue.message}`);
    throw permanent(ErrorTypes.BadModelRequest, `modelTurn: invalid request: ${issues.join('; ')}`);
  }
  const req = parsed.data;
  const modelName = req.model ?? settings.defaultModel;
  if (!modelName) throw permanent(ErrorTypes.ModelConfigInvalid, 'modelTurn: no model: name one in the request, set CADRE_MODEL, or set models.default in cadre.config.yaml');
  const id = parseModelId(modelName);
  const outputCheck = req.outputSchema ? schemaChecker(req.outputSchema) : undefined;
  const callsBy = toolCallsOf(id, settings);
  const finishing = callsBy.mode === 'required';
  if (finishing && req.tools?.some((t) => t.name === FINISH_TOOL)) {
    throw permanent(ErrorTypes.BadModelRequest, `modelTurn: a tool named ${FINISH_TOOL} cannot be offered with toolCalls: required, where it is how the model answers`);
  }
  const tools = finishing ? [...(req.tools ?? []), finishTool(req.outputSchema)] : req.tools;
  const system = finishing ? [REQUIRED_GUIDE, req.system].filter((part) => part !== undefined && part !== '').join('\n\n') : req.system;
  try {
    const model = withUniqueCallIds(languageModel(id, settings));
    const fit = await fitted({ ...req, system }, tools, id, settings);
    const ask = async (resample: boolean) => {
      const reply = await streamed(
        {
          model,
          system,
          messages: fit.messages.map(toModelMessage),
          tools: tools && toolSet(tools),
          // Every reply a call of an offered tool: a server that constrains by grammar can give nothing else.
          ...(finishing && { toolChoice: 'required' as const }),
          ...(req.outputSchema && !finishing && { output: Output.object({ schema: jsonSchema(req.outputSchema) }) }),
          ...(resample && resampled(id, settings)),
          maxOutputTokens: fit.maxOutputTokens,
          // Temporal's retry policy owns retries (with the provider's Retry-After).
          maxRetries: 0,
          abortSignal: signal,
        },
        listener,
      );
      if (reply.text === '' && reply.toolCalls.length === 0 && !ANSWERED.has(reply.finishReason)) {
        // A 200 whose body held no stream (a proxy's page, a cut body): transient, like any unreadable answer.
        throw transient(ErrorTypes.ModelUnavailable, `${id.provider}:${id.name}: the provider's stream ended without an answer (finish reason ${reply.finishReason})`);
      }
      const cached = reply.usage.inputTokenDetails?.cacheReadTokens;
      const usage = { inputTokens: reply.usage.inputTokens ?? 0, outputTokens: reply.usage.outputTokens ?? 0, ...(cached && { cachedInputTokens: cached }) };
      return { ...reply, calls: reply.toolCalls.map((call) => checkCall(call.toolCallId, call.toolName, call.input)), usage };
    };
    const checkCall = toolCallChecker(tools ?? []);
    const shortened = fit.shortened && { shortened: fit.shortened };
    if (finishing) {
      const server = callsBy.endpoint === undefined ? undefined : settings.compatible[callsBy.endpoint]?.baseURL;
      const context = { outputSchema: req.outputSchema, label: `${id.provider}:${id.name}`, server, request: req, mustChange: req.mustChange };
      const afterSentBack = sentBack(req.messages);
      const first = await ask(afterSentBack);
      try {
        return { ...requiredTurn(first.calls, first, context, listener), ...shortened };
      } catch (err) {
        // A greedy reply cut before its call ended (a grammar-held model can loop on whitespace) is
        // asked again once, sampled; both replies' tokens count (and a reader saw both replies' text).
        if (afterSentBack || (err as { type?: string }).type !== ErrorTypes.ModelOutputCut || !resampling(id, settings)) throw err;
        const again = await ask(true);
        const cached = (first.usage.cachedInputTokens ?? 0) + (again.usage.cachedInputTokens ?? 0);
        const usage = { inputTokens: first.usage.inputTokens + again.usage.inputTokens, outputTokens: first.usage.outputTokens + again.usage.outputTokens, ...(cached && { cachedInputTokens: cached }) };
        return { ...requiredTurn(again.calls, { ...again, usage }, context, listener), ...shortened };
      }
    }
    const result = await ask(false);
    const { calls, usage } = result;
    // A small model read in a text mode writes a turn's calls all at once, the later ones guessing
    // what the earlier return (Qwen2.5-Coder 1.5B: fs_write of a file beside the fs_read of it, run
    // side by side). Only the first runs; the model, whose history shows that call alone, makes
    // the next after its result.
    const toolCalls = toolCallsOf(id, settings).mode === 'native' ? calls : calls.slice(0, 1);
    const turn: ModelTurnResult = {
      ...(result.text && { text: result.text }),
      toolCalls,
      finishReason: result.finishReason,
      usage,
      ...shortened,
    };
    if (toolCalls.length > 0) return turn;
    const unparsed = findUnparsedToolCall(result.text, (req.tools ?? []).map((t) => t.name));
    // Only a final answer is held to the output schema; an answer that matches it is taken as one.
    try {
      if (outputCheck) turn.output = outputCheck(result.text, id.name);
    } catch (err) {
      if (!unparsed) throw err;
    }
    if (unparsed && turn.output === undefined) turn.unparsedToolCall = { ...unparsed, fix: toolCallsFix(id, settings, unparsed.style) };
    else if (req.mustChange) {
      const missing = notChanged(req.messages, req.mustChange);
      if (missing) turn.notChanged = missing;
    }
    return turn;
  } catch (err) {
    if (NoObjectGeneratedError.isInstance(err)) {
      throw permanent(ErrorTypes.StructuredOutputInvalid, `${id.provider}:${id.name}: the answer is not the JSON the output schema asks for: ${redact(clip(err.text ?? ''), settings.secrets)}`);
    }
    throw classifyProviderError(err, { provider: id.provider, model: id.name, secrets: settings.secrets });
  }
}

/**
 * The messages as they fit a local endpoint's context (the oldest tool results shortened first),
 * and the output tokens to ask for: what the request or endpoint says, or what the fit kept free.
 * Other providers' windows are theirs to enforce; their messages go as they are.
 */
async function fitted(
  req: z.infer<typeof modelTurnRequestSchema>,
  tools: OfferedTool[] | undefined,
  id: ModelId,
  settings: ModelSettings,
): Promise<{ messages: ModelMessageInput[]; maxOutputTokens?: number; shortened?: Shortened }> {
  const whole = { messages: req.messages, maxOutputTokens: req.maxOutputTokens };
  if (id.provider !== 'openai-compatible') return whole;
  const { endpoint, model } = compatibleEndpoint(id, settings);
  const window = await contextTokens(endpoint, model);
  if (window === undefined) return whole;
  const reserve = outputReserve(window, req.maxOutputTokens ?? endpoint.sampling.maxOutputTokens);
  const fit = fitToWindow({ system: req.system, tools, messages: req.messages }, window, reserve, `${id.provider}:${id.name}`);
  return { ...fit, maxOutputTokens: reserve };
}

const RESAMPLE_TEMPERATURE = 0.7;

/**
 * The temperature of a turn after a call sent back, or of a reply asked again, for an endpoint that
 * samples greedily: greedy, the model says the same again.
 */
function resampled(id: ModelId, settings: ModelSettings): { temperature?: number } {
  return resampling(id, settings) ? { temperature: RESAMPLE_TEMPERATURE } : {};
}

function resampling(id: ModelId, settings: ModelSettings): boolean {
  return id.provider === 'openai-compatible' && compatibleEndpoint(id, settings).endpoint.sampling.temperature === 0;
}

/** What to set so that calls written in `style` are read: the endpoint's `toolCalls`, named. */
function toolCallsFix(id: ModelId, settings: ModelSettings, style: WrittenStyle): string {
  const { mode, endpoint } = toolCallsOf(id, settings);
  if (endpoint === undefined) return `serve the model as an endpoint under models.compatible in cadre.config.yaml, with toolCalls: ${style}`;
  const where = `models.compatible.${endpoint}.toolCalls in cadre.config.yaml`;
  if (mode !== style) return `set toolCalls: ${style} for the endpoint (${where}; it is ${mode} now)`;
  const other = style === 'xml' ? 'json' : 'xml';
  return `toolCalls: ${style} is set and did not read it: try toolCalls: ${other} for the endpoint (${where}), or a model that follows the format`;
}

/** Finish reasons of a stream that really answered (an empty answer with these is the model's own). */
const ANSWERED = new Set(['stop', 'length', 'content-filter', 'tool-calls']);

interface StreamedTurn {
  text: string;
  toolCalls: { toolCallId: string; toolName: string; input: unknown }[];
  finishReason: string;
  usage: { inputTokens?: number; outputTokens?: number; inputTokenDetails?: { cacheReadTokens?: number } };
}

/** Reads the provider's stream whole, telling the listener each piece of text; a failure in the stream is thrown. */
async function streamed(options: Parameters<typeof streamText>[0], listener?: TurnListener): Promise<StreamedTurn> {
  // Errors arrive as parts of the stream and are thrown below: nothing is logged on the side.
  const result = streamText({ ...options, onError: () => undefined });
  const turn: StreamedTurn = { text: '', toolCalls: [], finishReason: 'unknown', usage: {} };
  for await (const part of result.fullStream) {
    switch (part.type) {
      case 'text-delta':
        turn.text += part.text;
        listener?.textDelta(part.text);
        break;
      case 'tool-call':
        turn.toolCalls.push(part);
        break;
      case 'finish':
        turn.finishReason = part.finishReason;
        turn.usage = part.totalUsage;
        break;
      case 'error':
        throw part.error;
      case 'abort':
        throw options.abortSignal?.reason ?? new Error('the model call was aborted');
    }
  }
  return turn;
}

function toolSet(tools: OfferedTool[]): ToolSet {
  // No execute functions: the model's calls come back to the caller, who runs them as activities.
  return Object.fromEntries(tools.map((t) => [t.name, tool({ description: t.description, inputSchema: jsonSchema(t.inputSchema) })]));
}


/** Checks the model's tool calls against the tools offered; a schema zod cannot read is left to the tool's own check. */
function toolCallChecker(tools: OfferedTool[]): (id: string, name: string, input: unknown) => ToolCall {
  const offered = new Map(tools.map((t) => [t.name, t.inputSchema]));
  return (id, name, input) => {
    const args = isPlainObject(input) ? input : {};
    const schema = offered.get(name);
    if (!schema) return { id, name, args, error: `no tool named ${JSON.stringify(clip(name))} was offered (offered: ${tools.map((t) => t.name).join(', ') || 'none'})` };
    if (!isPlainObject(input)) return { id, name, args, error: `the arguments are not a JSON object: ${clip(typeof input === 'string' ? input : JSON.stringify(input) ?? String(input))}` };
    const checked = checkerFor(schema)?.safeParse(input);
    if (checked && !checked.success) return { id, name, args, error: `the arguments do not match ${name}'s schema: ${issueList(checked.error.issues)}` };
    return { id, name, args };
  };
}

/** Checkers by schema text: a turn converts only the schemas of tools called, each once per worker. */
const checkers = new Map<string, z.ZodType | undefined>();
const MAX_CHECKERS = 256;

function checkerFor(schema: Record<string, unknown>): z.ZodType | undefined {
  const key = JSON.stringify(schema);
  if (checkers.has(key)) return checkers.get(key);
  const checker = zodFromJsonSchema(schema);
  if (checkers.size >= MAX_CHECKERS) checkers.delete(checkers.keys().next().value as string);
  checkers.set(key, checker);
  return checker;
}

function zodFromJsonSchema(schema: Record<string, unknown>): z.ZodType | undefined {
  try {
    return z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch {
    return undefined;
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function issueList(issues: z.core.$ZodIssue[]): string {
  return issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ');
}

function toModelMessage(message: ModelMessageInput): ModelMessage {
  switch (message.role) {
    case 'user':
      return { role: 'user', content: message.content };
    case 'assistant':
      return {
        role: 'assistant',
        content: [
          ...(message.content ? [{ type: 'text' as const, text: message.content }] : []),
          ...(message.toolCalls ?? []).map((call) => ({ type: 'tool-call' as const, toolCallId: call.id, toolName: call.name, input: call.args })),
        ],
      };
    case 'tool':
      return {
        role: 'tool',
        content: [{ type: 'tool-result', toolCallId: message.toolCallId, toolName: message.toolName, output: toolOutput(message.result, message.isError) }],
      };
  }
}

/** A tool result read back from the blob store can be far bigger than a model should be sent. */
const MAX_TOOL_RESULT_CHARS = 64 * 1024;

function toolOutput(result: unknown, isError: boolean | undefined) {
  const text = typeof result === 'string' ? result : JSON.stringify(result);
  if (text !== undefined && text.length > MAX_TOOL_RESULT_CHARS) {
    const value = `${text.slice(0, MAX_TOOL_RESULT_CHARS)}… (${text.length - MAX_TOOL_RESULT_CHARS} more characters not shown; read the rest in parts)`;
    return isError ? { type: 'error-text' as const, value } : { type: 'text' as const, value };
  }
  if (typeof result === 'string') return isError ? { type: 'error-text' as const, value: result } : { type: 'text' as const, value: result };
  const value = (result ?? null) as import('@ai-sdk/provider').JSONValue;
  return isError ? { type: 'error-json' as const, value } : { type: 'json' as const, value };
}

/** A checker for the final answer: JSON Schema to zod, so mismatches come with paths. */
function schemaChecker(schema: Record<string, unknown>): (text: string, model: string) => unknown {
  let zodSchema: z.ZodType;
  try {
    zodSchema = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
  } catch (err) {
    throw permanent(ErrorTypes.BadModelRequest, `modelTurn: outputSchema is not a JSON Schema cadre can check: ${(err as Error).message}`);
  }
  return (text, model) => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      throw permanent(ErrorTypes.StructuredOutputInvalid, `${model}: the answer is not JSON: ${JSON.stringify(clip(text))}`);
    }
    const checked = zodSchema.safeParse(value);
    if (!checked.success) {
      throw permanent(ErrorTypes.StructuredOutputInvalid, `${model}: the answer does not match the output schema: ${issueList(checked.error.issues)}`);
    }
    return checked.data;
  };
}

function clip(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}
