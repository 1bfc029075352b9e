/**
 * A real HTTP server on 127.0.0.1 that speaks OpenAI chat completions (`POST /v1/chat/completions`)
 * and Anthropic messages (`POST /v1/messages`), answering from a queue of scripted responses and
 * recording every request, so tests go through the real AI SDK clients over HTTP.
 * A `stream: true` request gets the same reply as server-sent events in the provider's wire format
 * (what streamText reads); errors, raw bodies and hangs are answered the same either way.
 * `toolCallsAs` answers like a small model served without tool calling: its calls written into
 * the text in one of the styles such models use, which only cadre's `toolCalls` modes read back.
 * A request with `tool_choice: "required"` is answered as llama.cpp's grammar answers it: always a
 * call, the scripted text going to the `finish` tool when one is offered (`ignoreToolChoice`
 * answers as a server that ignores it does: as scripted).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * How a small model writes tool calls as text: `json-block` a ```json block holding
 * `{"name", "arguments"}`; `tool-call-tags` the same object in `<tool_call>` tags (Hermes, Qwen 2.5);
 * `bare-json` the object alone (Qwen2.5-Coder 1.5B on llama.cpp's server); `xml` an element named
 * for the tool with one child per argument (morphXml); `qwen` `<tool_call><function=…><parameter=…>`
 * (Qwen3-Coder).
 */
export type TextToolCallStyle = 'json-block' | 'tool-call-tags' | 'bare-json' | 'xml' | 'qwen';
export const TEXT_TOOL_CALL_STYLES: readonly TextToolCallStyle[] = ['json-block', 'tool-call-tags', 'bare-json', 'xml', 'qwen'];

export interface FakeReply {
  text?: string;
  /** `args` as a string goes out as it is (OpenAI's `arguments` text), to send broken JSON. */
  toolCalls?: { id: string; name: string; args: Record<string, unknown> | string }[];
  /** The tool calls go out as text in this style (after `text`), not as the wire format's tool calls; streamed in pieces of 5 characters that cut through the tags. */
  toolCallsAs?: TextToolCallStyle;
  usage?: { inputTokens: number; outputTokens: number; cachedInputTokens?: number };
  /** OpenAI's wire format: `length` says the reply reached max_tokens (cut). Default: `tool_calls` or `stop`. */
  finishReason?: 'length';
  /** Streaming only: the text in these pieces, in order (their join is the text). Default: `text` split after each run of whitespace. */
  chunks?: string[];
  /** Streaming only: wait this long between text chunks. Default 0. */
  chunkDelayMs?: number;
  /** Streaming only: send this many text chunks (or all, if fewer), then destroy the socket: a stream broken mid-way. */
  cutAfterChunks?: number;
  /** Called when this reply has been sent whole (it is then in `delivered`). */
  onDelivered?: () => void;
  /** Streaming only: the last frames wait for this; `'cut'` destroys the socket there instead, so a reply held here is never whole. */
  beforeEnd?: () => Promise<'end' | 'cut'>;
}

export interface FakeError {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
  /** The body's bytes as they are (a cut or non-JSON answer), instead of `body` as JSON. */
  raw?: string;
}

/** Answers nothing for `hangMs` (then 500), to test timeouts and cancellation. */
export interface FakeHang {
  hangMs: number;
}

export type FakeResponse = FakeReply | FakeError | FakeHang;

export interface RecordedRequest {
  path: string;
  /** Date.now() when the request arrived. */
  at: number;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

export interface ChunkTime {
  text: string;
  at: number;
}

export interface FakeModelServer {
  baseURL: string;
  requests: RecordedRequest[];
  /** Each streamed text chunk and Date.now() just after it was written, across all requests. */
  chunkTimes: ChunkTime[];
  enqueue(...responses: FakeResponse[]): void;
  /**
   * The context it holds, as llama.cpp's server says it (GET /props) and enforces it: a request
   * whose prompt (its messages' and tools' JSON, a token per 4 bytes) and max_tokens exceed it gets
   * llama.cpp's 400. Unset: no /props, no limit.
   */
  contextTokens?: number;
  /** The prompt tokens of each chat request, as counted for `contextTokens`. */
  promptTokens: number[];
  /** The usage of each reply sent whole (a reply cut off, say by its client's death, is not in it): what a provider bills. */
  delivered: { inputTokens: number; outputTokens: number }[];
  /** Answer `tool_choice: "required"` as scripted, as servers that ignore it do (Ollama). */
  ignoreToolChoice: boolean;
  /** Drops the responses no request took (a test that queued one more than it expected to be asked for). */
  clearQueue(): void;
  /** Forgets the requests it got and the replies still queued: a test file's `beforeEach`. */
  reset(): void;
  close(): Promise<void>;
}

export interface FakeServerOptions {
  /** Answers a request when the queue is empty (long conversations); without it, an empty queue is a 500. */
  respond?: (body: Record<string, unknown>, path: string) => FakeResponse;
}

export async function startFakeModelServer(options: FakeServerOptions = {}): Promise<FakeModelServer> {
  const queue: FakeResponse[] = [];
  const requests: RecordedRequest[] = [];
  const chunkTimes: ChunkTime[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      } catch {
        return send(res, 400, { error: { message: 'fake server: body is not JSON' } });
      }
      const path = req.url ?? '';
      // What a server says of itself is not a request of the script's.
      if (path === '/props' || path === '/api/show') {
        if (path === '/props' && fake.contextTokens !== undefined) return send(res, 200, { default_generation_settings: { n_ctx: fake.contextTokens } });
        return send(res, 404, { error: { message: `fake server: no route ${path}` } });
      }
      if (path === '/v1/chat/completions' && fake.contextTokens !== undefined) {
        const prompt = fakeTokens(body);
        fake.promptTokens.push(prompt);
        const wanted = prompt + (typeof body.max_tokens === 'number' ? body.max_tokens : 0);
        if (wanted > fake.contextTokens) {
          return send(res, 400, { error: { code: 400, type: 'exceed_context_size_error', message: 'the request exceeds the available context size, try increasing it', n_prompt_tokens: prompt, n_ctx: fake.contextTokens } });
        }
      }
      requests.push({ path, at: Date.now(), headers: req.headers, body });
      const next = queue.shift() ?? options.respond?.(body, path);
      if (!next) return send(res, 500, { error: { message: `fake server: no scripted response left for ${path}` } });
      if ('hangMs' in next) {
        const timer = setTimeout(() => send(res, 500, { error: { message: 'fake server: hung' } }), next.hangMs);
        res.on('close', () => clearTimeout(timer));
        return;
      }
      if ('status' in next && next.raw !== undefined) {
        res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers });
        return res.end(next.raw);
      }
      if ('status' in next) return send(res, next.status, next.body ?? { error: { message: `status ${next.status}` } }, next.headers);
      const billed = { inputTokens: next.usage?.inputTokens ?? 0, outputTokens: next.usage?.outputTokens ?? 0 };
      res.once('finish', () => {
        fake.delivered.push(billed);
        next.onDelivered?.();
      });
      const required = body.tool_choice === 'required' && !fake.ignoreToolChoice;
      const forced = required ? asRequired(next, body) : undefined;
      if (typeof forced === 'string') return send(res, 500, { error: { message: forced } });
      if (forced) return answer(res, body, path, forced, chunkTimes);
      return answer(res, body, path, next.toolCallsAs ? asText(next, next.toolCallsAs) : next, chunkTimes);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const fake: FakeModelServer = {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    chunkTimes,
    ignoreToolChoice: false,
    promptTokens: [],
    delivered: [],
    enqueue: (...responses) => queue.push(...responses),
    clearQueue: () => void queue.splice(0),
    reset: () => {
      requests.splice(0);
      queue.splice(0);
      fake.delivered.splice(0);
    },
    close: () =>
      new Promise((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
  return fake;
}

/** A chat request's prompt in tokens, as this server counts them: its messages' and tools' JSON, 4 bytes a token. */
export function fakeTokens(body: Record<string, unknown>): number {
  return Math.ceil(Buffer.byteLength(JSON.stringify([body.messages, body.tools ?? []])) / 4);
}

/**
 * A reply under `tool_choice: "required"`, as a server constraining by grammar gives it: the calls
 * as real calls (never as text), and scripted text with no call as a call to `finish` (its
 * `answer`, or the text's JSON when `finish` takes the output's own fields). With no `finish` offered
 * there is no call the text could be, and the script is wrong.
 */
function asRequired(reply: FakeReply, body: Record<string, unknown>): FakeReply | string {
  if (reply.toolCalls?.length) return { ...reply, toolCallsAs: undefined };
  const tools = (body.tools ?? []) as { function: { name: string; parameters?: { properties?: Record<string, unknown> } } }[];
  const finish = tools.find((t) => t.function.name === 'finish');
  if (!finish) return 'fake server: tool_choice is required, no finish tool was offered, and the scripted reply has no call';
  const text = reply.text ?? '';
  const properties = finish.function.parameters?.properties ?? {};
  const answer = Object.keys(properties).join() === 'answer' ? (properties.answer as { type?: string }) : undefined;
  const args = answer ? { answer: answer.type === 'string' ? text : (JSON.parse(text) as unknown) } : (JSON.parse(text) as Record<string, unknown>);
  return { ...reply, text: undefined, chunks: undefined, toolCallsAs: undefined, toolCalls: [{ id: 'finish-1', name: 'finish', args }] };
}

function answer(res: http.ServerResponse, body: Record<string, unknown>, path: string, next: FakeReply, chunkTimes: ChunkTime[]): void {
  if (body.stream === true && path === '/v1/chat/completions') return void writeStream(res, openAiStream(next, body), next, chunkTimes);
  if (body.stream === true && path === '/v1/messages') return void writeStream(res, anthropicStream(next, String(body.model)), next, chunkTimes);
  if (path === '/v1/chat/completions') return send(res, 200, openAiBody(next, String(body.model)));
  if (path === '/v1/messages') return send(res, 200, anthropicBody(next, String(body.model)));
  return send(res, 404, { error: { message: `fake server: no route ${path}` } });
}

/** A reply whose tool calls are written into its text, as a model without tool calling writes them. */
function asText(reply: FakeReply, style: TextToolCallStyle): FakeReply {
  const calls = (reply.toolCalls ?? []).map((call) => writeCall(call.name, typeof call.args === 'string' ? (JSON.parse(call.args) as Record<string, unknown>) : call.args, style));
  const text = [reply.text, ...calls].filter((part) => part !== undefined && part !== '').join('\n');
  return { ...reply, toolCalls: undefined, toolCallsAs: undefined, text, chunks: reply.chunks ?? text.match(/[\s\S]{1,5}/g) ?? [] };
}

export function writeCall(name: string, args: Record<string, unknown>, style: TextToolCallStyle): string {
  const value = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
  const escape = (v: string) => v.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  switch (style) {
    case 'json-block':
      return `\`\`\`json\n${JSON.stringify({ name, arguments: args }, null, 2)}\n\`\`\``;
    case 'bare-json':
      return JSON.stringify({ name, arguments: args });
    case 'tool-call-tags':
      return `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;
    case 'xml':
      return `<${name}>\n${Object.entries(args).map(([key, v]) => `  <${key}>${escape(value(v))}</${key}>`).join('\n')}\n</${name}>`;
    case 'qwen':
      return `<tool_call>\n<function=${name}>\n${Object.entries(args).map(([key, v]) => `<parameter=${key}>\n${escape(value(v))}\n</parameter>`).join('\n')}\n</function>\n</tool_call>`;
  }
}

function send(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function openAiBody(reply: FakeReply, model: string) {
  const toolCalls = reply.toolCalls ?? [];
  return {
    id: 'chatcmpl-fake',
    object: 'chat.completion',
    created: 1_700_000_000,
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: reply.text ?? null,
          ...(toolCalls.length > 0 && {
            tool_calls: toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: typeof call.args === 'string' ? call.args : JSON.stringify(call.args) } })),
          }),
        },
        finish_reason: reply.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
      },
    ],
    usage: { prompt_tokens: reply.usage?.inputTokens ?? 0, completion_tokens: reply.usage?.outputTokens ?? 0, total_tokens: (reply.usage?.inputTokens ?? 0) + (reply.usage?.outputTokens ?? 0), ...cachedDetails(reply) },
  };
}

function anthropicBody(reply: FakeReply, model: string) {
  const toolCalls = reply.toolCalls ?? [];
  return {
    id: 'msg_fake',
    type: 'message',
    role: 'assistant',
    model,
    content: [
      ...(reply.text !== undefined ? [{ type: 'text', text: reply.text }] : []),
      ...toolCalls.map((call) => ({ type: 'tool_use', id: call.id, name: call.name, input: call.args })),
    ],
    stop_reason: toolCalls.length > 0 ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: reply.usage?.inputTokens ?? 0, output_tokens: reply.usage?.outputTokens ?? 0 },
  };
}

/** A reply as server-sent events: those before the text, one per text chunk, and those after it. */
interface StreamFrames {
  head: string[];
  text: (piece: string) => string;
  tail: string[];
}

async function writeStream(res: http.ServerResponse, frames: StreamFrames, reply: FakeReply, chunkTimes: ChunkTime[]): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  // Each write waits to be flushed, so that a cut below cannot drop what came before it.
  const write = (frame: string) => new Promise((resolve) => res.write(frame, resolve));
  await write(frames.head.join(''));
  let sent = 0;
  for (const piece of textChunks(reply)) {
    if (sent === reply.cutAfterChunks) break;
    if (sent > 0 && reply.chunkDelayMs) await sleep(reply.chunkDelayMs);
    // The client may have aborted (or the server closed) while we waited.
    if (res.destroyed) return;
    await write(frames.text(piece));
    chunkTimes.push({ text: piece, at: Date.now() });
    sent++;
  }
  if (reply.cutAfterChunks !== undefined) return void res.destroy();
  if (reply.beforeEnd && (await reply.beforeEnd()) === 'cut') return void res.destroy();
  if (res.destroyed) return;
  res.end(frames.tail.join(''));
}

function textChunks(reply: FakeReply): string[] {
  return reply.chunks ?? reply.text?.match(/\s*\S+\s*|\s+/g) ?? [];
}

function hasText(reply: FakeReply): boolean {
  return reply.chunks !== undefined || reply.text !== undefined;
}

function argsText(args: Record<string, unknown> | string): string {
  return typeof args === 'string' ? args : JSON.stringify(args);
}

/** Tool-call arguments go out in a few pieces, as real servers send them. */
function argPieces(args: string): string[] {
  return args.match(/[\s\S]{1,8}/g) ?? [];
}

function openAiStream(reply: FakeReply, body: Record<string, unknown>): StreamFrames {
  const base = { id: 'chatcmpl-fake', object: 'chat.completion.chunk', created: 1_700_000_000, model: String(body.model) };
  const chunk = (delta: object, finishReason: string | null = null) => sse({ ...base, choices: [{ index: 0, delta, finish_reason: finishReason }] });
  const toolCalls = reply.toolCalls ?? [];
  const input = reply.usage?.inputTokens ?? 0;
  const output = reply.usage?.outputTokens ?? 0;
  const includeUsage = (body.stream_options as { include_usage?: boolean } | undefined)?.include_usage === true;
  return {
    // OpenAI opens with `content: ''` before text and `content: null` before tool calls; the SDK turns '' into an (empty) text part.
    head: [chunk({ role: 'assistant', content: hasText(reply) ? '' : null })],
    text: (piece) => chunk({ content: piece }),
    tail: [
      ...toolCalls.flatMap((call, index) => [
        chunk({ tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }),
        ...argPieces(argsText(call.args)).map((piece) => chunk({ tool_calls: [{ index, function: { arguments: piece } }] })),
      ]),
      chunk({}, reply.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop')),
      // Usage comes only when asked for, as from OpenAI (@ai-sdk/openai-compatible asks only with `includeUsage`).
      ...(includeUsage
        ? [sse({ ...base, choices: [], usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output, ...cachedDetails(reply) } })]
        : []),
      'data: [DONE]\n\n',
    ],
  };
}

function anthropicStream(reply: FakeReply, model: string): StreamFrames {
  const event = (data: { type: string } & Record<string, unknown>) => `event: ${data.type}\n${sse(data)}`;
  const toolCalls = reply.toolCalls ?? [];
  const first = hasText(reply) ? 1 : 0; // the text block, when there is one, is block 0
  return {
    head: [
      event({ type: 'message_start', message: { id: 'msg_fake', type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: reply.usage?.inputTokens ?? 0, output_tokens: 0 } } }),
      ...(hasText(reply) ? [event({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } })] : []),
    ],
    text: (piece) => event({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: piece } }),
    tail: [
      ...(hasText(reply) ? [event({ type: 'content_block_stop', index: 0 })] : []),
      ...toolCalls.flatMap((call, i) => [
        event({ type: 'content_block_start', index: first + i, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } }),
        ...argPieces(argsText(call.args)).map((piece) => event({ type: 'content_block_delta', index: first + i, delta: { type: 'input_json_delta', partial_json: piece } })),
        event({ type: 'content_block_stop', index: first + i }),
      ]),
      event({ type: 'message_delta', delta: { stop_reason: toolCalls.length > 0 ? 'tool_use' : 'end_turn', stop_sequence: null }, usage: { output_tokens: reply.usage?.outputTokens ?? 0 } }),
      event({ type: 'message_stop' }),
    ],
  };
}

function sse(data: unknown): string {
  return `data: ${JSON.stringify(data)}\n\n`;
}

/** OpenAI's count of prompt tokens read from its cache, when the reply scripts one. */
function cachedDetails(reply: FakeReply): { prompt_tokens_details?: { cached_tokens: number } } {
  return reply.usage?.cachedInputTokens === undefined ? {} : { prompt_tokens_details: { cached_tokens: reply.usage.cachedInputTokens } };
}
