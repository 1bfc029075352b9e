/**
 * Local HTTP servers the red team aims at or opts in to: a trap that records every request (and
 * terminates a workflow when reached, as an attacker reaching the control plane would), a server
 * that answers with a secret in many forms, and a redirector to other ports.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LocalServer {
  port: number;
  /** Requests received, as `METHOD url`. */
  hits: string[];
  close(): Promise<void>;
}

async function listen(handler: http.RequestListener, host = '::'): Promise<LocalServer & { server: http.Server }> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  // `::` takes IPv4 too (dual stack): every loopback spelling and the machine's own addresses reach it.
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    hits,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A trap: whoever reaches it gets it to do what an attacker on the control plane would,
 * `onHit(path)` (terminate the workflow named in the path); it answers `trap-<port>`.
 */
export async function startTrap(onHit: (path: string) => Promise<void>): Promise<LocalServer> {
  return listen((req, res) => {
    void onHit(req.url ?? '/').finally(() => res.writeHead(200, { 'content-type': 'text/plain' }).end('trap reached\n'));
  });
}

/** A server a plan opts in to: `/ok` answers `body`. */
export async function startOpenServer(body: string): Promise<LocalServer> {
  return listen((_req, res) => void res.writeHead(200, { 'content-type': 'text/plain' }).end(body));
}

/** A server that answers with a secret: plain, base64, hex, JSON, in a header, big, in an error. */
export async function startSecretServer(secret: string): Promise<LocalServer> {
  const b64 = Buffer.from(secret).toString('base64');
  const routes: Record<string, () => { status?: number; type?: string; headers?: Record<string, string>; body: string }> = {
    '/plain': () => ({ body: `token=${secret}\n` }),
    '/b64': () => ({ body: `${b64}\n` }),
    '/hex': () => ({ body: `${Buffer.from(secret).toString('hex')}\n` }),
    '/json': () => ({ type: 'application/json', body: JSON.stringify({ token: secret, nested: { list: [secret] } }) }),
    '/header': () => ({ headers: { 'x-token': secret, 'set-cookie': `session=${encodeURIComponent(secret)}` }, body: 'see the headers\n' }),
    '/big': () => ({ body: `${'z'.repeat(10_000)}\n${secret}\n${b64}\n` }),
    '/error': () => ({ status: 403, body: `forbidden for ${secret}\n` }),
    '/error500': () => ({ status: 500, body: `crashed holding ${secret}\n` }),
  };
  return listen((req, res) => {
    const route = routes[req.url ?? ''];
    if (!route) return void res.writeHead(404).end('no such route\n');
    const r = route();
    res.writeHead(r.status ?? 200, { 'content-type': r.type ?? 'text/plain', ...r.headers }).end(r.body);
  });
}

/** Redirects `/to?url=<u>` to `<u>` (302). */
export async function startRedirector(): Promise<LocalServer> {
  return listen((req, res) => {
    const target = new URL(req.url ?? '/', 'http://x').searchParams.get('url') ?? '/';
    res.writeHead(302, { location: target }).end();
  });
}
