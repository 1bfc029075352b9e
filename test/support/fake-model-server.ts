/**
 * A real HTTP server on 127.0.0.1 that speaks OpenAI chat completions (`POST /v1/chat/completions`)
 * and Anthropic messages (`POST /v1/messages`), answering from a queue of scripted responses and
 * recording every request, so tests go through the real AI SDK clients over HTTP.
 * generateText does not stream; a `stream: true` request is answered 400 so a change would show.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeReply {
  text?: string;
  /** `args` as a string goes out as it is (OpenAI's `arguments` text), to send broken JSON. */
  toolCalls?: { id: string; name: string; args: Record<string, unknown> | string }[];
  usage?: { inputTokens: number; outputTokens: number };
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

export interface FakeModelServer {
  baseURL: string;
  requests: RecordedRequest[];
  enqueue(...responses: FakeResponse[]): void;
  close(): Promise<void>;
}

export interface FakeServerOptions {
  /** Answers a request when the queue is empty (long conversations); without it, an empty queue is a 500. */
  respond?: (body: Record<string, unknown>, path: string) => FakeResponse;
}

export async function startFakeModelServer(options: FakeServerOptions = {}): Promise<FakeModelServer> {
  const queue: FakeResponse[] = [];
  const requests: RecordedRequest[] = [];
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
      requests.push({ path, at: Date.now(), headers: req.headers, body });
      if (body.stream === true) return send(res, 400, { error: { message: 'fake server: streaming is not scripted' } });
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
      if (path === '/v1/chat/completions') return send(res, 200, openAiBody(next, String(body.model)));
      if (path === '/v1/messages') return send(res, 200, anthropicBody(next, String(body.model)));
      return send(res, 404, { error: { message: `fake server: no route ${path}` } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    enqueue: (...responses) => queue.push(...responses),
    close: () =>
      new Promise((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
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
        finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
      },
    ],
    usage: { prompt_tokens: reply.usage?.inputTokens ?? 0, completion_tokens: reply.usage?.outputTokens ?? 0, total_tokens: (reply.usage?.inputTokens ?? 0) + (reply.usage?.outputTokens ?? 0) },
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
