/**
 * A filtering HTTP proxy on a unix socket: the only way out of a sandbox whose network is off.
 * It understands `CONNECT host:port` (HTTPS, or any TCP) and absolute-form plain HTTP
 * (`GET http://host/path`), runs every destination through the checker and connects to the
 * checked address only.
 */
import { lstat, chmod, unlink } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { checkDestination, isEgressDenied, type EgressLookup } from './check';
import type { EgressPolicy } from './policy';

/** One decision of the proxy, for the run's log. Never holds a request body. */
export interface EgressLogEvent {
  allowed: boolean;
  kind: 'CONNECT' | 'HTTP';
  host: string;
  port: number;
  /** The address connected to (allowed) or refused (when the refusal was about an address). */
  address?: string;
  rule?: string;
  /** One line, e.g. `egress allowed CONNECT api.github.com:443 -> 140.82.112.6`. */
  message: string;
}

export interface EgressProxyOptions {
  socketPath: string;
  lookup?: EgressLookup;
  /** Called once per decision with a one-line summary (the event's `message`) and the event itself. */
  log?: (line: string, event: EgressLogEvent) => void;
}

export interface EgressProxy {
  socketPath: string;
  close(): Promise<void>;
}

// Hop-by-hop headers (RFC 9110 7.6.1) and the proxy's own: they concern one connection, not the request.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

export async function startEgressProxy(policy: EgressPolicy, options: EgressProxyOptions): Promise<EgressProxy> {
  const { socketPath, lookup } = options;
  const log = (event: EgressLogEvent) => options.log?.(event.message, event);
  const open = new Set<Duplex>();
  const track = (socket: Duplex) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  };

  // No overall request deadline: an upload through the proxy may take longer than Node's default 5 minutes.
  const server = http.createServer({ requestTimeout: 0 });
  server.on('connection', track);

  server.on('connect', (req: http.IncomingMessage, client: Duplex, head: Buffer) => {
    const target = parseAuthority(req.url ?? '');
    if (!target) return void refuse(client, 400, `bad CONNECT target ${JSON.stringify(req.url ?? '')}: expected host:port`);
    client.on('error', () => client.destroy());
    checkDestination(target.host, target.port, policy, { lookup }).then(
      (checked) => {
        if (client.destroyed) return;
        log({ allowed: true, kind: 'CONNECT', host: target.host, port: target.port, address: checked.address, message: `egress allowed CONNECT ${target.host}:${target.port} -> ${checked.address}` });
        const upstream = net.connect({ host: checked.address, port: checked.port });
        track(upstream);
        let connected = false;
        upstream.once('connect', () => {
          connected = true;
          client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
          if (head.length > 0) upstream.write(head);
          upstream.pipe(client);
          client.pipe(upstream);
        });
        upstream.once('error', (err) => {
          if (connected) client.destroy();
          else refuse(client, 502, `egress failed: could not connect to ${target.host}:${target.port} (${checked.address}): ${err.message}`);
        });
        upstream.once('close', () => {
          if (connected) client.destroy();
        });
        client.once('close', () => upstream.destroy());
      },
      (err: unknown) => {
        const denied = decisionOf(err);
        log({ allowed: false, kind: 'CONNECT', host: target.host, port: target.port, ...denied.fields, message: denied.message });
        refuse(client, denied.status, denied.message);
      },
    );
  });

  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '');
    } catch {
      return void answer(res, 400, 'this is a proxy: send absolute-form requests (GET http://host/path) or CONNECT host:port');
    }
    if (url.protocol !== 'http:') return void answer(res, 400, `this proxy forwards http: URLs only; use CONNECT for ${url.protocol}`);
    const port = url.port ? Number(url.port) : 80;
    const host = url.hostname;
    checkDestination(host, port, policy, { lookup }).then(
      (checked) => {
        log({ allowed: true, kind: 'HTTP', host, port, address: checked.address, message: `egress allowed ${req.method} ${url.origin} -> ${checked.address}` });
        const upstream = http.request({
          // One connection per request: a pooled socket would outlive the check that opened it.
          agent: false,
          host: checked.address,
          port,
          method: req.method,
          path: `${url.pathname}${url.search}`,
          headers: { ...forwardedHeaders(req.headers), host: url.host },
          setHost: false,
        });
        upstream.on('response', (upstreamRes) => {
          res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.statusMessage, forwardedHeaders(upstreamRes.headers));
          upstreamRes.pipe(res);
        });
        upstream.on('error', (err) => {
          if (!res.headersSent) answer(res, 502, `egress failed: could not reach ${url.host} (${checked.address}): ${err.message}`);
          else res.destroy();
        });
        res.on('close', () => upstream.destroy());
        req.pipe(upstream);
      },
      (err: unknown) => {
        const denied = decisionOf(err);
        log({ allowed: false, kind: 'HTTP', host, port, ...denied.fields, message: denied.message });
        answer(res, denied.status, denied.message);
      },
    );
  });

  await removeStaleSocket(socketPath);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Only this user (and so the sandbox, which runs as this user) may use the proxy.
  await chmod(socketPath, 0o600);

  let closing: Promise<void> | undefined;
  return {
    socketPath,
    close: () => {
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        for (const socket of open) socket.destroy();
        await closed;
        await unlink(socketPath).catch(() => undefined);
      })();
      return closing;
    },
  };
}

/** `host:port` or `[v6]:port`, as a CONNECT request names its target. */
function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]\s/@]+):(\d{1,5})$/.exec(authority);
  if (!match) return undefined;
  return { host: match[1], port: Number(match[2]) };
}

function decisionOf(err: unknown): { status: number; message: string; fields: { address?: string; rule?: string } } {
  if (isEgressDenied(err)) {
    const details = (err.details?.[0] ?? {}) as { address?: string; rule?: string };
    return { status: 403, message: err.message, fields: { address: details.address, rule: details.rule } };
  }
  // DNS failures and the like: the destination was allowed but cannot be reached.
  const message = `egress failed: ${oneLine(err instanceof Error ? err.message : String(err))}`;
  return { status: 502, message, fields: { rule: 'unreachable' } };
}

/** A refusal on a CONNECT socket, which has no ServerResponse: a status line, a one-line body, and close. */
function refuse(socket: Duplex, status: number, message: string): void {
  if (socket.destroyed) return;
  const body = `${oneLine(message)}\n`;
  const reason = http.STATUS_CODES[status] ?? 'Error';
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

function answer(res: http.ServerResponse, status: number, message: string): void {
  const body = `${oneLine(message)}\n`;
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
  res.end(body);
}

function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ').slice(0, 1000);
}

/** Headers without hop-by-hop ones, including those a `Connection` header names. */
function forwardedHeaders(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((name) => name.trim().toLowerCase())
      .filter(Boolean),
  );
  const kept: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || named.has(name)) continue;
    kept[name] = value;
  }
  return kept;
}

/** A socket file left by a proxy that died is removed; anything else at that path is an error. */
async function removeStaleSocket(socketPath: string): Promise<void> {
  const stat = await lstat(socketPath).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (!stat) return;
  if (!stat.isSocket()) throw new Error(`cannot start the egress proxy: ${socketPath} exists and is not a socket`);
  await unlink(socketPath);
}
