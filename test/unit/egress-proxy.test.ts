/**
 * The egress proxy on a unix socket, with real clients: raw CONNECT, absolute-form HTTP,
 * undici's ProxyAgent, TLS through a tunnel, and curl through the bridge script as a
 * sandboxed program would use it.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { Pool, ProxyAgent, fetch as undiciFetch } from 'undici';
import { BRIDGE_SCRIPT, NO_EGRESS, proxyEnv, startEgressProxy, type EgressLogEvent, type EgressPolicy, type EgressProxy } from '../../src/egress';
import { makeCertificates } from '../support/tls';
import { type TestServer, startServer, tableLookup } from '../support/egress-servers';

const lookup = tableLookup({
  'loop.example.org': ['127.0.0.1'],
  'rebind.example.org': ['93.184.216.34', '127.0.0.1'],
  'meta.example.org': ['169.254.169.254'],
});
const ownAddress = Object.values(os.networkInterfaces())
  .flat()
  .find((info) => info && !info.internal && info.family === 'IPv4')?.address;

interface RawAnswer {
  status: number;
  statusLine: string;
  /** What followed the header block until the proxy closed (a refusal's body). */
  body: string;
  socket: net.Socket;
}

/** Sends `CONNECT target` on `socket` and reads the proxy's answer head (and, for a refusal, its body). */
function connectThrough(socket: net.Socket, target: string): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    let buffered = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n\r\n');
      if (end === -1) return;
      const statusLine = buffered.subarray(0, buffered.indexOf('\r\n')).toString();
      const status = Number(statusLine.split(' ')[1]);
      socket.off('data', onData);
      if (status === 200) return resolve({ status, statusLine, body: '', socket });
      let body = buffered.subarray(end + 4).toString();
      socket.on('data', (more: Buffer) => (body += more.toString()));
      socket.on('close', () => resolve({ status, statusLine, body, socket }));
    };
    socket.on('data', onData);
    socket.on('error', reject);
    socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
  });
}

function rawConnect(socketPath: string, target: string): Promise<RawAnswer> {
  return connectThrough(net.connect(socketPath), target);
}

/** An HTTP/1.0-style request over an open tunnel, read to the end. */
function getOverTunnel(socket: net.Socket, pathname: string): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
    socket.on('close', () => resolve(text.slice(text.indexOf('\r\n\r\n') + 4)));
    socket.write(`GET ${pathname} HTTP/1.1\r\nHost: here\r\nConnection: close\r\n\r\n`);
  });
}

/** An absolute-form request (`GET http://host/path`) to the proxy's unix socket. */
function absoluteGet(socketPath: string, url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, path: url, method: 'GET', headers: { host: URL.canParse(url) ? new URL(url).host : 'proxy' }, agent: false }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The messages of an error and its causes, one line each. */
function causes(err: unknown): string {
  const lines: string[] = [];
  // Duck-typed: undici's DOMException is not an Error of this realm.
  for (let e = err as { message?: unknown; cause?: unknown } | undefined; e && typeof e === 'object' && lines.length < 10; e = e.cause as typeof e) lines.push(String(e.message));
  return lines.join('\n');
}

let app: TestServer;
let other: TestServer;
let dir: string;
const proxies: EgressProxy[] = [];
async function proxy(policy: Partial<EgressPolicy>, log?: (line: string, event: EgressLogEvent) => void): Promise<EgressProxy> {
  const started = await startEgressProxy({ ...NO_EGRESS, allow: ['loop.example.org', 'rebind.example.org', 'meta.example.org'], ...policy }, { socketPath: path.join(dir, `proxy-${proxies.length}.sock`), lookup, ...(log && { log }) });
  proxies.push(started);
  return started;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-egress-proxy-'));
  app = await startServer((req, res) => res.end(`hello ${req.url}`), '::');
  other = await startServer((_req, res) => res.end('other'));
});

afterAll(async () => {
  await Promise.all(proxies.map((p) => p.close()));
  await app.close();
  await other.close();
});

describe('egress proxy refuses every way to this machine by default', () => {
  let refusing: EgressProxy;
  beforeAll(async () => {
    refusing = await proxy({});
  });

  const targets = [
    'localhost',
    '127.0.0.1',
    '127.1',
    '2130706433',
    '0x7f000001',
    '0177.0.0.1',
    '[::1]',
    '[::ffff:127.0.0.1]',
    '[::ffff:7f00:1]',
    '0.0.0.0',
    '[::]',
    'loop.example.org',
    'rebind.example.org',
    os.hostname(),
    ...(ownAddress ? [ownAddress] : []),
  ];
  test.each(targets)('CONNECT %s:<port> gets 403 with the reason', async (host) => {
    const answer = await rawConnect(refusing.socketPath, `${host}:${app.port}`);
    expect(answer.statusLine).toBe('HTTP/1.1 403 Forbidden');
    expect(answer.body).toMatch(/^egress denied: .* is (loopback|unspecified|this machine's own address).*\n$/);
    expect(answer.body.trim()).not.toContain('\n');
  });

  test.each(['169.254.169.254:80', 'meta.example.org:80', '10.0.0.1:5432', '100.64.0.1:80', '[fd00::1]:80', '[64:ff9b::a00:1]:80', 'elsewhere.example.org:443'])('CONNECT %s gets 403', async (target) => {
    const answer = await rawConnect(refusing.socketPath, target);
    expect(answer.status).toBe(403);
    expect(answer.body).toMatch(/^egress denied: /);
  });

  test('absolute-form HTTP to loopback gets 403, and the server sees nothing', async () => {
    const before = app.requests.length;
    for (const host of ['127.0.0.1', 'localhost', '2130706433', '[::1]']) {
      const answer = await absoluteGet(refusing.socketPath, `http://${host}:${app.port}/secret`);
      expect(answer.status).toBe(403);
      expect(answer.body).toMatch(/^egress denied: 127\.0\.0\.1|^egress denied: \[::1\]/);
    }
    expect(app.requests.length).toBe(before);
  });
});

describe('egress proxy with a loopback port opted in', () => {
  test('CONNECT to the opted-in port tunnels; another port gets 403 with the message', async () => {
    const events: EgressLogEvent[] = [];
    const p = await proxy({ loopback: [app.port] }, (_line, event) => events.push(event));
    const open = await rawConnect(p.socketPath, `127.0.0.1:${app.port}`);
    expect(open.statusLine).toBe('HTTP/1.1 200 Connection Established');
    expect(await getOverTunnel(open.socket, '/tunnelled')).toBe('hello /tunnelled');

    const refused = await rawConnect(p.socketPath, `localhost:${other.port}`);
    expect(refused.statusLine).toBe('HTTP/1.1 403 Forbidden');
    expect(refused.body).toMatch(new RegExp(`^egress denied: 127\\.0\\.0\\.1:${other.port} \\(from "localhost".*\\) is loopback; allow it with egress\\.loopback: \\[${other.port}\\]\\n$`));
    expect(other.requests).toEqual([]);

    expect(events.map((e) => [e.allowed, e.kind, e.port, e.rule])).toEqual([
      [true, 'CONNECT', app.port, undefined],
      [false, 'CONNECT', other.port, 'loopback'],
    ]);
    expect(events[0].message).toBe(`egress allowed CONNECT 127.0.0.1:${app.port} -> 127.0.0.1`);
  });

  test('absolute-form plain HTTP is forwarded to the checked address', async () => {
    const p = await proxy({ loopback: [app.port] });
    expect(await absoluteGet(p.socketPath, `http://localhost:${app.port}/plain?x=1`)).toEqual({ status: 200, body: 'hello /plain?x=1' });
    expect(await absoluteGet(p.socketPath, `http://${ownAddress ?? '127.0.0.1'}:${app.port}/own`)).toEqual({ status: 200, body: 'hello /own' });
    expect((await absoluteGet(p.socketPath, `http://127.0.0.1:${other.port}/`)).status).toBe(403);
  });

  test("undici's ProxyAgent reaches the opted-in port over the unix socket and is refused elsewhere", async () => {
    const p = await proxy({ loopback: [app.port] });
    const agent = new ProxyAgent({ uri: 'http://egress-proxy', clientFactory: (origin, opts) => new Pool(origin, { ...opts, connect: { socketPath: p.socketPath } }) });
    try {
      const ok = await undiciFetch(`http://127.0.0.1:${app.port}/via-undici`, { dispatcher: agent });
      expect(await ok.text()).toBe('hello /via-undici');
      // undici tunnels plain HTTP with CONNECT too, and reports the proxy's 403 as the cause.
      const refused = await undiciFetch(`http://127.0.0.1:${other.port}/`, { dispatcher: agent }).catch((err: unknown) => err);
      expect(causes(refused)).toMatch(/Proxy response \(403\)/);
      expect(other.requests).toEqual([]);
    } finally {
      await agent.close();
    }
  });

  test('TLS goes through a CONNECT tunnel end to end', async () => {
    const certs = makeCertificates(mkdtempSync(path.join(os.tmpdir(), 'cadre-egress-tls-')));
    const server = https.createServer({ cert: readFileSync(certs.serverCert), key: readFileSync(certs.serverKey) }, (_req, res) => res.end('secret over tls'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const p = await proxy({ loopback: [port] });
      const tunnel = await rawConnect(p.socketPath, `localhost:${port}`);
      expect(tunnel.status).toBe(200);
      const secure = tls.connect({ socket: tunnel.socket, servername: 'localhost', ca: readFileSync(certs.ca) });
      const text = await new Promise<string>((resolve, reject) => {
        let received = '';
        secure.on('secureConnect', () => secure.write('GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n'));
        secure.on('data', (chunk: Buffer) => (received += chunk.toString()));
        secure.on('end', () => resolve(received));
        secure.on('error', reject);
      });
      expect(text).toMatch(/secret over tls$/);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('egress proxy housekeeping', () => {
  test('requests that are not for a proxy get 400', async () => {
    const p = await proxy({ loopback: [app.port] });
    expect((await absoluteGet(p.socketPath, '/not-absolute')).status).toBe(400);
    expect((await absoluteGet(p.socketPath, `https://127.0.0.1:${app.port}/`)).status).toBe(400);
    expect((await rawConnect(p.socketPath, 'no-port')).status).toBe(400);
    expect((await rawConnect(p.socketPath, `user@127.0.0.1:${app.port}`)).status).toBe(400);
  });

  test('a name that does not resolve gets 502, not 403', async () => {
    const p = await proxy({ allow: ['gone.example.org'] });
    const answer = await rawConnect(p.socketPath, 'gone.example.org:443');
    expect(answer.status).toBe(502);
    expect(answer.body).toMatch(/^egress failed: .*ENOTFOUND/);
  });

  test('close ends open tunnels and removes the socket file; a stale socket is replaced, a file is not', async () => {
    const socketPath = path.join(dir, 'closing.sock');
    const p = await startEgressProxy({ ...NO_EGRESS, loopback: [app.port] }, { socketPath, lookup });
    const tunnel = await rawConnect(socketPath, `127.0.0.1:${app.port}`);
    const closed = new Promise((resolve) => tunnel.socket.on('close', resolve));
    await p.close();
    await closed;
    expect(existsSync(socketPath)).toBe(false);

    // A socket file left behind by a proxy that was killed (a clean close removes its file).
    const dead = spawn(process.execPath, ['-e', "require('net').createServer().listen(process.argv[1], () => console.log('up'))", socketPath], { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise((resolve) => dead.stdout!.once('data', resolve));
    dead.kill('SIGKILL');
    await new Promise((resolve) => dead.once('exit', resolve));
    expect(existsSync(socketPath)).toBe(true);
    const again = await startEgressProxy(NO_EGRESS, { socketPath, lookup });
    expect((await rawConnect(socketPath, `127.0.0.1:${app.port}`)).status).toBe(403);
    await again.close();

    const notASocket = path.join(dir, 'regular-file');
    writeFileSync(notASocket, 'keep me');
    await expect(startEgressProxy(NO_EGRESS, { socketPath: notASocket })).rejects.toThrow(/exists and is not a socket/);
    expect(readFileSync(notASocket, 'utf8')).toBe('keep me');
  });
});

describe('the bridge script', () => {
  let p: EgressProxy;
  let bridge: ChildProcess;
  let bridgePort: number;
  let startupMs: number;

  beforeAll(async () => {
    p = await proxy({ loopback: [app.port] });
    const started = process.hrtime.bigint();
    bridge = spawn(process.execPath, ['-e', BRIDGE_SCRIPT, p.socketPath, '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    bridgePort = await new Promise<number>((resolve, reject) => {
      let out = '';
      bridge.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve(Number(out.slice(0, out.indexOf('\n'))));
      });
      bridge.once('exit', (code) => reject(new Error(`bridge exited with ${code}`)));
    });
    startupMs = Number(process.hrtime.bigint() - started) / 1e6;
    process.stderr.write(`egress bridge ready in ${startupMs.toFixed(0)} ms\n`);
  });

  afterAll(() => {
    bridge.kill();
  });

  test('signals readiness with its port as the first stdout line', () => {
    expect(Number.isInteger(bridgePort) && bridgePort > 0).toBe(true);
    expect(startupMs).toBeLessThan(5000);
  });

  test('pipes a node client to the proxy: CONNECT through TCP on 127.0.0.1', async () => {
    const open = await connectThrough(net.connect(bridgePort, '127.0.0.1'), `127.0.0.1:${app.port}`);
    expect(open.status).toBe(200);
    expect(await getOverTunnel(open.socket, '/bridged')).toBe('hello /bridged');
    const refused = await connectThrough(net.connect(bridgePort, '127.0.0.1'), `127.0.0.1:${other.port}`);
    expect(refused.status).toBe(403);
    expect(refused.body).toMatch(/^egress denied: 127\.0\.0\.1:\d+ is loopback/);
  });

  const curl = ['/usr/bin/curl', '/usr/local/bin/curl', '/bin/curl'].find((candidate) => existsSync(candidate));
  const run = (file: string, args: string[], env: Record<string, string> = {}) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(file, args, { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 20_000 }, (err, stdout, stderr) => resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
    });

  (curl ? test : test.skip)('curl through the bridge: plain HTTP, a tunnel, and refusals', async () => {
    const proxyUrl = `http://127.0.0.1:${bridgePort}`;
    expect(await run(curl!, ['-sS', '-x', proxyUrl, `http://127.0.0.1:${app.port}/curl`])).toMatchObject({ code: 0, stdout: 'hello /curl' });
    expect(await run(curl!, ['-sS', '-p', '-x', proxyUrl, `http://localhost:${app.port}/curl-tunnel`])).toMatchObject({ code: 0, stdout: 'hello /curl-tunnel' });
    // The environment proxyEnv gives a sandboxed program is enough on its own.
    expect(await run(curl!, ['-sS', `http://127.0.0.1:${app.port}/from-env`], proxyEnv(bridgePort))).toMatchObject({ code: 0, stdout: 'hello /from-env' });

    const refusedPlain = await run(curl!, ['-sS', '-x', proxyUrl, '-w', '%{http_code}', `http://127.0.0.1:${other.port}/`]);
    expect(refusedPlain.stdout).toMatch(new RegExp(`^egress denied: 127\\.0\\.0\\.1:${other.port} is loopback.*\\n403$`));
    const refusedTunnel = await run(curl!, ['-sS', '-p', '-x', proxyUrl, `http://127.0.0.1:${other.port}/`]);
    expect(refusedTunnel.code).not.toBe(0);
    expect(refusedTunnel.stderr).toMatch(/403/);
    const metadata = await run(curl!, ['-sS', '-x', proxyUrl, '-w', '%{http_code}', 'http://169.254.169.254/latest/meta-data/']);
    expect(metadata.stdout).toMatch(/^egress denied: 169\.254\.169\.254:80 is the cloud metadata service.*\n403$/);
    expect(other.requests).toEqual([]);
  });

  test('proxyEnv points every spelling of the proxy variables at the bridge, with NO_PROXY empty', () => {
    expect(proxyEnv(3128)).toEqual({
      HTTP_PROXY: 'http://127.0.0.1:3128',
      HTTPS_PROXY: 'http://127.0.0.1:3128',
      ALL_PROXY: 'http://127.0.0.1:3128',
      http_proxy: 'http://127.0.0.1:3128',
      https_proxy: 'http://127.0.0.1:3128',
      all_proxy: 'http://127.0.0.1:3128',
      NO_PROXY: '',
      no_proxy: '',
    });
  });

  test('refuses to start without a socket path, and exits when its port is taken', async () => {
    expect((await run(process.execPath, ['-e', BRIDGE_SCRIPT])).code).toBe(2);
    const taken = await run(process.execPath, ['-e', BRIDGE_SCRIPT, p.socketPath, String(bridgePort)]);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toMatch(/^egress bridge: .*EADDRINUSE/);
  });
});
