/**
 * `cadre codec-server`: Temporal's remote codec protocol (POST /encode and /decode with
 * `{"payloads": [...]}` in proto JSON), so the Web UI (its "Codec Server" setting, or the dev
 * server's --ui-codec-endpoint) and `temporal --codec-endpoint` show encrypted payloads decoded.
 * CORS answers only the origins given; with a token, requests must carry `Authorization: Bearer`.
 */
import { timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

export interface CodecServerOptions {
  codec: PayloadCodec;
  port: number;
  host?: string;
  /** Browser origins allowed to call (the Web UI's, e.g. http://localhost:8233). */
  origins: string[];
  /** When set, every request must send `Authorization: Bearer <token>`. */
  token?: string;
  log?: (line: string) => void;
}

export interface CodecServer {
  url: string;
  close(): Promise<void>;
}

/** A request body over this is refused: the UI sends a page of payloads at a time, far less. */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
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
  const route = new URL(req.url ?? '/', 'http://codec').pathname.replace(/\/+$/, '');
  if (req.method !== 'POST' || (route !== '/encode' && route !== '/decode')) return reply(res, 404, { message: 'POST /encode or /decode' });
  if (options.token !== undefined && !bearerMatches(req.headers.authorization, options.token)) return reply(res, 401, { message: 'a bearer token is required' });
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

function bearerMatches(header: string | undefined, token: string): boolean {
  const given = Buffer.from(/^Bearer (.+)$/.exec(header ?? '')?.[1] ?? '');
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
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
