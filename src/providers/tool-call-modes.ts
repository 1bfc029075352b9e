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
  qwen3CoderToolMiddleware,
} from '@ai-sdk-tool/parser';
import type { LanguageModelV3, LanguageModelV3Middleware, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { wrapLanguageModel } from 'ai';
import type { ToolCallMode } from './config';

export { TOOL_CALL_MODES, type ToolCallMode } from './config';

/** The model, reading its tool calls from its text in `mode` (the model itself for `native`). */
export function withToolCallMode(model: LanguageModelV3, mode: ToolCallMode): LanguageModelV3 {
  return mode === 'native' ? model : wrapLanguageModel({ model, middleware: MIDDLEWARE[mode] });
}

/**
 * The library's middleware with two settings of cadre's. Markup that does not parse stays in the
 * answer's text (the library drops it by default): no call may vanish silently, and the agent
 * loop's guard reads what is left. The tools' system prompt goes first when there was none (the
 * library appends it): many local models' chat templates refuse a system message anywhere else.
 */
function cadreSettings(middleware: LanguageModelV3Middleware): LanguageModelV3Middleware {
  return {
    ...middleware,
    transformParams: async (options) => {
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
 * Hermes, plus ```json blocks when streaming (a non-streamed answer's blocks are already read by
 * the library's JSON recovery). A call found there turns the finish reason to tool-calls, as
 * the library does for its own.
 */
const jsonMiddleware: LanguageModelV3Middleware = {
  ...hermesToolMiddleware,
  wrapStream: async (options) => {
    const result = await (hermesToolMiddleware.wrapStream as NonNullable<LanguageModelV3Middleware['wrapStream']>)(options);
    const tools = decodeOriginalToolsFromProviderOptions(options.params.providerOptions);
    let called = false;
    const stream = result.stream.pipeThrough(fenced.createStreamParser({ tools, options: { emitRawToolCallTextOnError: true } })).pipeThrough(
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

const MIDDLEWARE: Record<Exclude<ToolCallMode, 'native'>, LanguageModelV3Middleware> = {
  json: cadreSettings(jsonMiddleware),
  xml: cadreSettings(morphXmlToolMiddleware),
  qwen: cadreSettings(qwen3CoderToolMiddleware),
};
