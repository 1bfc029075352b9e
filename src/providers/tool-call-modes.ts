/**
 * How a model calls tools (`models.compatible.<endpoint>.toolCalls`). `native` is the provider's
 * own tool calling. The others are for models served without it (llama.cpp's server, Ollama, vLLM
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
  return mode === 'native' ? model : wrapLanguageModel({ model, middleware: MIDDLEWARE[mode] });
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

/**
 * Hermes, plus ```json blocks and an answer that is a bare call object when streaming (a
 * non-streamed answer's are already read by the library's JSON recovery). A call found there
 * turns the finish reason to tool-calls, as the library does for its own.
 */
const jsonMiddleware: LanguageModelV3Middleware = {
  ...hermesToolMiddleware,
  wrapStream: async (options) => {
    const result = await (hermesToolMiddleware.wrapStream as NonNullable<LanguageModelV3Middleware['wrapStream']>)(options);
    const tools = decodeOriginalToolsFromProviderOptions(options.params.providerOptions);
    let called = false;
    const stream = result.stream
      .pipeThrough(fenced.createStreamParser({ tools, options: { emitRawToolCallTextOnError: true } }))
      .pipeThrough(bareCall(new Set(tools.map((t) => t.name))))
      .pipeThrough(
      new TransformStream<LanguageModelV3StreamPart, LanguageModelV3StreamPart>({
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

type Part = LanguageModelV3StreamPart;

/** Text held back to see whether it is a bare call: a call is short, an answer this long is not one. */
const MAX_BARE_CALL_CHARS = 64 * 1024;

/**
 * An answer that is nothing but `{"name": <an offered tool>, "arguments": {…}}`, without tags or
 * fence (Qwen2.5-Coder 1.5B on llama.cpp's server writes its calls so in json mode). An answer
 * whose text starts with `{` is held back until it ends, then goes on as one call, or as the text
 * it was; any other answer streams as it comes.
 */
function bareCall(offered: Set<string>): TransformStream<Part, Part> {
  let state: 'undecided' | 'holding' | 'passing' = 'undecided';
  let held: Part[] = [];
  let text = '';
  const release = (controller: TransformStreamDefaultController<Part>) => {
    for (const part of held) controller.enqueue(part);
    held = [];
    state = 'passing';
  };
  return new TransformStream<Part, Part>({
    transform: (part, controller) => {
      if (state === 'passing') return controller.enqueue(part);
      if (part.type === 'text-start' || part.type === 'text-end') return void held.push(part);
      if (part.type === 'text-delta') {
        held.push(part);
        text += part.delta;
        const start = text.trimStart();
        if (start === '') return;
        if (!start.startsWith('{') || text.length > MAX_BARE_CALL_CHARS) return release(controller);
        state = 'holding';
        return;
      }
      if (part.type === 'finish' && state === 'holding') {
        const call = callIn(text, offered);
        if (call) {
          held = [];
          controller.enqueue({ type: 'tool-call', toolCallId: generateId(), toolName: call.name, input: JSON.stringify(call.args) });
          return controller.enqueue(part);
        }
      }
      // Anything else but the parts before the text (a call parsed by the others, the finish, an error) ends the wait.
      if (part.type === 'stream-start' || part.type === 'response-metadata' || part.type === 'raw') return controller.enqueue(part);
      release(controller);
      controller.enqueue(part);
    },
    flush: (controller) => release(controller),
  });
}

/** `{"name": tool, "arguments": {…}}` and nothing else, read as loosely as the library reads calls. */
function callIn(text: string, offered: Set<string>): { name: string; args: Record<string, unknown> } | undefined {
  let value: unknown;
  try {
    value = relaxedParse(text.trim());
  } catch {
    return undefined;
  }
  if (!isRecord(value) || typeof value.name !== 'string' || !offered.has(value.name) || !isRecord(value.arguments)) return undefined;
  return Object.keys(value).every((key) => key === 'name' || key === 'arguments') ? { name: value.name, args: value.arguments } : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const MIDDLEWARE: Record<Exclude<ToolCallMode, 'native'>, LanguageModelV3Middleware> = {
  json: cadreSettings(jsonMiddleware),
  xml: cadreSettings(morphXmlToolMiddleware),
  qwen: cadreSettings(qwen3CoderToolMiddleware),
};
