/**
 * `cadre codec-server`: Temporal's remote codec protocol (POST /encode and /decode with
 * `{"payloads": [...]}` in proto JSON), so the Web UI (its "Codec Server" setting, or the dev
 * server's --ui-codec-endpoint) and `temporal --codec-endpoint` show encrypted payloads decoded.
 *
 * Whoever reaches it can decrypt any payload, so every request must carry the token, before
 * anything else is looked at: as `Authorization: Bearer <token>` (`temporal --codec-auth`), or as
 * the first path segment, `/<token>/decode`, for the Web UI, which sends no header of its own to a
 * codec endpoint when it has no login. CORS answers only the origins given, but it only keeps
 * browsers from reading answers: the token is what refuses everyone else.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

export interface CodecServerOptions {
  codec: PayloadCodec;
  port: number;
  host?: string;
  /** Browser origins allowed to call (the Web UI's, e.g. http://localhost:8233). */
  origins: string[];
  /** Required of every request (`Authorization: Bearer <token>` or `/<token>/...`); MIN_TOKEN_LENGTH at least. */
  token: string;
  log?: (line: string) => void;
}

export interface CodecServer {
  url: string;
  close(): Promise<void>;
}

/** A request body over this is refused: the UI sends a page of payloads at a time, far less. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** Shorter tokens are refused: a token is all that stands between the network and the keys. */
export const MIN_TOKEN_LENGTH = 16;

/** A fresh token, for a server that lives as long as one process (`cadre dev`). */
export function randomCodecToken(): string {
  return randomBytes(24).toString('base64url');
}

export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  if (typeof options.token !== 'string' || options.token.length < MIN_TOKEN_LENGTH) {
    throw new Error(`the codec server needs a token of at least ${MIN_TOKEN_LENGTH} characters, so that only those given it can decrypt payloads`);
  }
  const log = options.log ?? (() => undefined);
  const server = http.createServer((req, res) => {
    handle(req, res, options).catch((err: unknown) => {
      log(`codec server: ${(err as Error).message}`);
      if (!res.headersSent) reply(res, 500, { message: (err as Error).message });
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function handle(req: http.IncomingMessage, res: http.ServerResponse, options: CodecServerOptions): Promise<void> {
  const origin = req.headers.origin;
  if (origin && options.origins.includes(origin)) {
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    res.setHeader('Vary', 'Origin');
  }
  if (req.method === 'OPTIONS') {
    res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', 'Content-Type, X-Namespace, Authorization');
    res.writeHead(origin && options.origins.includes(origin) ? 204 : 403).end();
    return;
  }
  // Nothing about routes before the token: an unknown one answers 401 like a known one.
  const route = authorizedRoute(req, options.token);
  if (route === undefined) {
    res.setHeader('WWW-Authenticate', 'Bearer');
    return reply(res, 401, { message: 'a token is required: Authorization: Bearer <token>, or the endpoint http://host:port/<token>' });
  }
  if (req.method !== 'POST' || (route !== '/encode' && route !== '/decode')) return reply(res, 404, { message: 'POST /encode or /decode' });
  const body = await readBody(req);
  if (body === undefined) return reply(res, 413, { message: `the request is over ${MAX_BODY_BYTES} bytes` });
  let payloads: Payload[];
  try {
    const parsed = JSON.parse(body) as { payloads?: unknown };
    if (!Array.isArray(parsed.payloads)) throw new Error('expected {"payloads": [...]}');
    payloads = parsed.payloads.map((p) => temporal.api.common.v1.Payload.fromObject(p as Record<string, unknown>) as Payload);
  } catch (err) {
    return reply(res, 400, { message: `bad request: ${(err as Error).message}` });
  }
  let result: Payload[];
  try {
    result = route === '/encode' ? await options.codec.encode(payloads) : await options.codec.decode(payloads);
  } catch (err) {
    return reply(res, 400, { message: (err as Error).message });
  }
  reply(res, 200, { payloads: result.map((p) => temporal.api.common.v1.Payload.toObject(temporal.api.common.v1.Payload.create(p), { bytes: String })) });
}

/**
 * The route a request asks for, its token segment taken off, or undefined without the right token
 * (in the Authorization header or as the first path segment).
 */
function authorizedRoute(req: http.IncomingMessage, token: string): string | undefined {
  const path = new URL(req.url ?? '/', 'http://codec').pathname.replace(/\/+$/, '');
  const [, first = '', ...rest] = path.split('/');
  if (tokensEqual(decodeSegment(first), token)) return `/${rest.join('/')}`.replace(/\/+$/, '');
  const bearer = /^Bearer +(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
  return bearer !== undefined && tokensEqual(bearer, token) ? path : undefined;
}

/** Constant time whatever the lengths: the digests compared are always 32 bytes. */
function tokensEqual(given: string, wanted: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(wanted));
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

async function readBody(req: http.IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function reply(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
}
