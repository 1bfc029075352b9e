/**
 * The browser bridge (`cadre serve`, docs/streaming.md): a Node `http` handler that speaks the AI
 * SDK's UI message stream, so `useChat` (or the page at `/`) talks to cadre sessions. The chat's id
 * is the session's id. A reply streams from the session's stream, each SSE event carrying its
 * offset as `id:`, so a browser that lost the stream resumes from where it was.
 *
 *   POST /api/chat                  useChat's body ({ id, messages }): sends the last user message
 *   GET  /api/chat/:id/stream       resumes (?from=N, or Last-Event-ID); 204 when nothing is left
 *   POST /api/chat/:id/answer       { waitId, value }: answers an approval
 *   GET  /                          the page (examples/browser/index.html)
 */
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import type { SendResult, SessionInput } from '../protocol/session';
import { type CadreUiChunk, UiMessageStream } from '../streaming/ui-message-stream';
import { CadreError } from '../errors/cadre-error';
import { packageRoot } from '../package-root';
import { type CadreClient, errorChain } from './client';
import { sendMessage, streamOffset } from './sessions';
import { checkWorkflowId } from './workflow-ids';

export interface ChatHandlerOptions {
  client: CadreClient;
  /** How a chat's session starts (`sessionInput`): its model, tools, approvals and workspace. */
  start: SessionInput;
  taskQueue?: string;
  /** The page served at `GET /` (default: the package's examples/browser/index.html); false: none. */
  page?: string | false;
  /** Host headers served (`127.0.0.1:3000`); others get 403, against DNS rebinding. Default: any. */
  hosts?: string[];
  /** Browser origins besides the server's own that may call the API, with CORS (a useChat app's dev server). */
  origins?: string[];
}

/** For `http.createServer`, or a framework's middleware: with `next`, unknown paths fall through. */
export type ChatHandler = (req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void) => void;

/** `ai`'s UI_MESSAGE_STREAM_HEADERS, copied so the CLI does not load the AI SDK to serve. */
const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-vercel-ai-ui-message-stream': 'v1', 'x-accel-buffering': 'no' };
/** useChat sends the whole conversation each time; only its last message is read. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;
/** A refused message (too long, session ending) fails fast: until then the answer may still be a JSON error. */
const HOLD_HEADERS_MS = 2000;
/** Comments that keep proxies from closing a stream that waits (for an approval, a slow model). */
const KEEP_ALIVE_MS = 15_000;
/** How long a finished reply waits for its last events to be read. */
const CATCH_UP_MS = 10_000;

class RequestError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A reply being written: where the session's stream stood when its message went, and its result. */
interface Reply {
  from: Promise<number>;
  done: Promise<SendResult>;
}

export function createChatHandler(options: ChatHandlerOptions): ChatHandler {
  const { client } = options;
  /** The reply in progress per chat, for resumes that name no offset (useChat's replay). */
  const replies = new Map<string, Reply>();
  const pageFile = options.page ?? path.join(packageRoot(), 'examples', 'browser', 'index.html');
  let page: Buffer | undefined;

  const send = (id: string, text: string): Reply => {
    const from = streamOffset(client, id);
    const reply = { from, done: from.then(() => sendMessage(client, id, text, options.start, { ...(options.taskQueue && { taskQueue: options.taskQueue }) })) };
    replies.set(id, reply);
    const forget = () => void (replies.get(id) === reply && replies.delete(id));
    // The reply goes on when its browser leaves; this also keeps its failure from going unhandled.
    reply.done.then(forget, forget);
    return reply;
  };

  const stream = (res: ServerResponse, id: string, from: number, end: StreamTarget['end'], hold: boolean, messageId: string) =>
    streamReply(client, res, { id, from, end, hold, messageId });

  async function route(req: IncomingMessage, res: ServerResponse, next?: (err?: unknown) => void): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://cadre.invalid');
    if (options.hosts && !options.hosts.includes(req.headers.host ?? '')) throw new RequestError(403, `host ${req.headers.host ?? '(none)'} is not served here`);
    const at = /^\/api\/chat\/([^/]+)\/(stream|answer)$/.exec(url.pathname);
    if (url.pathname === '/api/chat' || at) {
      const origin = req.headers.origin;
      const listed = origin !== undefined && (options.origins ?? []).includes(origin);
      if (listed) res.setHeader('access-control-allow-origin', origin).setHeader('vary', 'Origin');
      // A page elsewhere must not drive agents here (its requests carry its Origin).
      if (!listed && !sameOrigin(req)) throw new RequestError(403, 'cross-origin requests are refused (cadre serve --origin allows one)');
      if (req.method === 'OPTIONS') {
        return void res.writeHead(204, { 'access-control-allow-methods': 'GET, POST', 'access-control-allow-headers': 'content-type, last-event-id', 'access-control-max-age': '600' }).end();
      }
      if (!at) {
        allow(req, 'POST');
        const { id, text } = chatRequest(await readJson(req));
        const reply = send(id, text);
        const from = await reply.from;
        return stream(res, id, from, reply.done, true, `reply-${from}`);
      }
      const id = chatId(at[1]);
      if (at[2] === 'answer') {
        allow(req, 'POST');
        const { waitId, value } = answerRequest(await readJson(req));
        await client.answer(id, waitId, value);
        return json(res, 200, { workflowId: id, waitId, value, accepted: true });
      }
      allow(req, 'GET');
      const given = resumeFrom(req, url);
      const reply = replies.get(id);
      if (reply) {
        const start = await reply.from;
        return stream(res, id, given ?? start, reply.done.then((r) => ({ offset: r.offset })), false, `reply-${start}`);
      }
      // No reply in progress here: what the browser missed, up to now.
      const now = await streamOffset(client, id);
      if (given === undefined || given >= now) return void res.writeHead(204).end();
      return stream(res, id, given, Promise.resolve({ offset: now }), false, `reply-${given}`);
    }
    if ((url.pathname === '/' || url.pathname === '/index.html') && pageFile !== false && req.method === 'GET') {
      try {
        page ??= readFileSync(pageFile);
      } catch {
        throw new RequestError(404, `no page at ${pageFile}`);
      }
      res.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-cache',
        'x-content-type-options': 'nosniff',
        'content-security-policy': "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; base-uri 'none'; form-action 'none'",
      });
      return void res.end(page);
    }
    if (next) return next();
    throw new RequestError(404, `no route for ${req.method} ${url.pathname}`);
  }

  return (req, res, next) => {
    route(req, res, next).catch((err: unknown) => {
      if (!res.headersSent) return json(res, statusOf(err), { error: messageOf(err) });
      res.end();
    });
  };
}

interface StreamTarget {
  id: string;
  from: number;
  /**
   * Where the reply's events end (its SendResult's offset; undefined: the session does not say),
   * and its text, to send whole when its stream cannot be read.
   */
  end: Promise<{ offset?: number; reply?: string }>;
  /** Keep the head back a moment, so that a refused message is a JSON error and not a stream. */
  hold: boolean;
  messageId: string;
}

/** Streams the session's events from `from` to the reply's end as UI message chunks, then `[DONE]`. */
async function streamReply(client: CadreClient, res: ServerResponse, target: StreamTarget): Promise<void> {
  const ui = new UiMessageStream(target.messageId);
  const stop = new AbortController();
  // A browser that leaves stops the reading here; the reply goes on in the session.
  const gone = new Promise<void>((resolve) => res.on('close', () => (stop.abort(), resolve())));
  let keepAlive: NodeJS.Timeout | undefined;
  const open = () => {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(200, SSE_HEADERS);
    res.flushHeaders();
    keepAlive = setInterval(() => res.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
  };
  // The offset goes on an event's last chunk only: a browser that resumes after it has them all.
  const write = (chunks: CadreUiChunk[], offset?: number) => {
    if (chunks.length === 0 || res.writableEnded || res.destroyed) return;
    open();
    res.write(chunks.map((c, i) => `${offset !== undefined && i === chunks.length - 1 ? `id: ${offset}\n` : ''}data: ${JSON.stringify(c)}\n\n`).join(''));
  };
  const held = target.hold ? setTimeout(open, HOLD_HEADERS_MS) : (open(), undefined);

  let end: number | undefined;
  let next = target.from;
  let unreadable: unknown;
  const reading = (async () => {
    // awaitStart: the first message starts the session; until it has, there is nothing to read.
    for await (const event of client.events(target.id, { from: next, awaitStart: true, signal: stop.signal, until: (e) => end !== undefined && e.offset + 1 >= end })) {
      // The page that holds the reply's last event may hold the next message's first ones.
      if (end !== undefined && event.offset >= end) break;
      next = event.offset + 1;
      write(ui.push(event), event.offset);
    }
  })().catch((err: unknown) => {
    // Caught at once: the reply may take long to come, and an unhandled rejection ends the process.
    unreadable = err ?? new Error('the stream could not be read');
  });

  let failure: unknown;
  let whole: string | undefined;
  let catchUp: NodeJS.Timeout | undefined;
  let unread = false;
  try {
    const result = await Promise.race([target.end, gone]);
    if (result) {
      ({ offset: end, reply: whole } = result);
      unread = end === undefined;
      if (end === undefined || next >= end) stop.abort();
      else catchUp = setTimeout(() => stop.abort(), CATCH_UP_MS);
    }
  } catch (err) {
    failure = err;
    stop.abort();
  }
  await reading;
  if (unreadable !== undefined) {
    // A stream that cannot be read (a session older than streams) loses no reply: it goes whole.
    unread = true;
    if (whole === undefined) failure ??= unreadable;
  }
  clearTimeout(held);
  clearTimeout(catchUp);
  clearInterval(keepAlive);
  if (res.writableEnded || res.destroyed) return;
  // Nothing of it read, or the stream stopped showing its text: the reply goes whole.
  if (failure === undefined && whole && ((unread && next === target.from) || ui.shed)) write(ui.whole(whole));
  if (failure !== undefined && !res.headersSent) return json(res, statusOf(failure), { error: messageOf(failure) });
  write(ui.finish(failure === undefined ? undefined : messageOf(failure)), end !== undefined && end > target.from ? end - 1 : undefined);
  res.end('data: [DONE]\n\n');
}

/** The chat's id and the text of its last user message, from useChat's body. */
function chatRequest(body: unknown): { id: string; text: string } {
  if (!isObject(body)) throw new RequestError(400, 'the body is a JSON object: { id, messages }');
  if (typeof body.id !== 'string') throw new RequestError(400, '"id" (the chat id, which is the session id) is missing');
  const id = chatId(body.id);
  if (body.trigger === 'regenerate-message') throw new RequestError(400, 'a session cannot take back a reply: send a new message instead');
  if (!Array.isArray(body.messages)) throw new RequestError(400, '"messages" (useChat\'s UI messages) is missing');
  const last = (body.messages as unknown[]).filter(isObject).reverse().find((m) => m.role === 'user');
  if (!last) throw new RequestError(400, 'no user message in "messages"');
  const parts = Array.isArray(last.parts) ? (last.parts as unknown[]) : [];
  const text = parts.map((p) => (isObject(p) && p.type === 'text' && typeof p.text === 'string' ? p.text : '')).join('');
  if (text.trim() === '') throw new RequestError(400, 'the last user message has no text part');
  return { id, text };
}

function answerRequest(body: unknown): { waitId: string; value: string } {
  if (!isObject(body) || typeof body.waitId !== 'string' || body.waitId === '' || typeof body.value !== 'string' || body.value === '') {
    throw new RequestError(400, 'the body is { "waitId": "...", "value": "approve" } (or another of the wait\'s choices)');
  }
  return { waitId: body.waitId, value: body.value };
}

function chatId(raw: string): string {
  let id: string;
  try {
    id = decodeURIComponent(raw);
  } catch {
    throw new RequestError(400, `bad chat id: ${JSON.stringify(raw)} is not URL-encoded text`);
  }
  try {
    checkWorkflowId(id);
  } catch (err) {
    throw new RequestError(400, `bad chat id: ${(err as Error).message.replace(/^the run id /, 'it ')}`);
  }
  return id;
}

/** Where a resume starts: after Last-Event-ID (what the browser last got) or at `?from`; undefined: not said. */
function resumeFrom(req: IncomingMessage, url: URL): number | undefined {
  const last = req.headers['last-event-id'];
  const raw = typeof last === 'string' && last !== '' ? last : url.searchParams.get('from');
  if (raw === null) return undefined;
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isInteger(n) || n < 0) throw new RequestError(400, `not a stream offset: ${JSON.stringify(raw)} (a whole number, 0 or more)`);
  return raw === last ? n + 1 : n;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  // A framework's body parser may have read it already.
  const parsed = (req as IncomingMessage & { body?: unknown }).body;
  if (isObject(parsed)) return parsed;
  // JSON only: a form or text/plain post from another site would need no CORS preflight.
  if (!/^application\/json\b/i.test(req.headers['content-type'] ?? '')) throw new RequestError(415, 'send JSON (content-type: application/json)');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new RequestError(413, `the body is over ${MAX_BODY_BYTES / 1024 / 1024} MB`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw new RequestError(400, 'the body is not JSON');
  }
}

function allow(req: IncomingMessage, method: string): void {
  if (req.method !== method) throw new RequestError(405, `use ${method} here`);
}

function sameOrigin(req: IncomingMessage): boolean {
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

function statusOf(err: unknown): number {
  if (err instanceof RequestError) return err.status;
  // The session's own refusals (a message too long, a session ending) and failed replies.
  return err instanceof CadreError ? 400 : 502;
}

function messageOf(err: unknown): string {
  return err instanceof CadreError || err instanceof RequestError ? err.message : errorChain(err).split('\n')[0];
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
