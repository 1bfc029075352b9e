/**
 * The codec server answers nothing without its token: not a route, not a 404, only 401, whatever
 * the method and path (CORS preflights aside, which answer the configured origins only). The token
 * comes as `Authorization: Bearer` or as the first path segment; `cadre dev` gives the Web UI a new
 * one in the endpoint's path at each start; `cadre codec-server` reads it from CADRE_CODEC_TOKEN.
 */
import type { ChildProcess } from 'node:child_process';
import type { Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { AesGcmCodec } from '../src/codec/aes-gcm';
import { parseCodecKeys } from '../src/codec/keys';
import { type CodecServer, MIN_TOKEN_LENGTH, randomCodecToken, startCodecServer } from '../src/codec/server';
import { freePort } from '../src/worker/ports';
import { runCadre, spawnCadre } from './support/cli';
import { tempWorkspace } from './support/harness';

const KEYS = 'k1=' + Buffer.alloc(32, 7).toString('base64');
const TOKEN = 'correct-horse-battery-staple-42';
const ORIGIN = 'http://ui.example';
const codec = new AesGcmCodec(parseCodecKeys(KEYS, 'test'));

const toJson = (payloads: Payload[]) => JSON.stringify({ payloads: payloads.map((p) => temporal.api.common.v1.Payload.toObject(temporal.api.common.v1.Payload.create(p), { bytes: String })) });
const plain: Payload = { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"hello"') };

/** The data of the first payload a codec route answered with. */
async function firstData(res: Response): Promise<string> {
  const body = (await res.json()) as { payloads: { data: string }[] };
  return Buffer.from(body.payloads[0].data, 'base64').toString();
}

describe('startCodecServer', () => {
  let server: CodecServer;
  let sealedBody: string;
  beforeAll(async () => {
    server = await startCodecServer({ codec, port: 0, origins: [ORIGIN], token: TOKEN });
    sealedBody = toJson(await codec.encode([plain]));
  });
  afterAll(() => server.close());

  const call = (method: string, route: string, headers: Record<string, string> = {}, body?: string) =>
    fetch(`${server.url}${route}`, { method, headers: { 'Content-Type': 'application/json', ...headers }, ...(body !== undefined && { body }) });

  test.each(['', 'short', 'x'.repeat(MIN_TOKEN_LENGTH - 1)])('refuses to start with the token %j', async (token) => {
    await expect(startCodecServer({ codec, port: 0, origins: [], token })).rejects.toThrow(`the codec server needs a token of at least ${MIN_TOKEN_LENGTH} characters`);
  });

  test('refuses to start with no token at all (a caller without types)', async () => {
    await expect(startCodecServer({ codec, port: 0, origins: [] } as unknown as Parameters<typeof startCodecServer>[0])).rejects.toThrow('needs a token');
  });

  test.each([
    ['POST', '/decode'],
    ['POST', '/encode'],
    ['GET', '/'],
    ['GET', '/anything'],
    ['POST', '/nope'],
    ['PUT', '/decode'],
    ['DELETE', '/x/y/z'],
  ])('%s %s without the token: 401, the same for every route', async (method, route) => {
    const res = await call(method, route, {}, method === 'POST' || method === 'PUT' ? sealedBody : undefined);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer');
    expect(await res.json()).toEqual({ message: expect.stringContaining('a token is required') });
  });

  test.each([
    ['a wrong token of the same length', 'x'.repeat(TOKEN.length)],
    ['a wrong token of another length', 'wrong!'],
    ['the token with a character more', `${TOKEN}x`],
    ['the token cut short', TOKEN.slice(0, -1)],
  ])('%s: 401 as a bearer token and as a path segment', async (_name, wrong) => {
    expect((await call('POST', '/decode', { Authorization: `Bearer ${wrong}` }, sealedBody)).status).toBe(401);
    expect((await call('POST', `/${wrong}/decode`, {}, sealedBody)).status).toBe(401);
    expect((await call('POST', `/${wrong}/nope`, {}, sealedBody)).status).toBe(401);
  });

  test('other ways of half sending it: 401', async () => {
    for (const authorization of [TOKEN, `Basic ${TOKEN}`, 'Bearer ', `Bearer ${TOKEN} extra`]) {
      expect((await call('POST', '/decode', { Authorization: authorization }, sealedBody)).status).toBe(401);
    }
    expect((await call('POST', `/decode/${TOKEN}`, {}, sealedBody)).status).toBe(401);
    expect((await call('POST', `/x/${TOKEN}/decode`, {}, sealedBody)).status).toBe(401);
    expect((await call('POST', `/decode?token=${TOKEN}`, {}, sealedBody)).status).toBe(401);
  });

  test('the bearer header: 200, decoded', async () => {
    const res = await call('POST', '/decode', { Authorization: `Bearer ${TOKEN}`, 'X-Namespace': 'default' }, sealedBody);
    expect(res.status).toBe(200);
    expect(await firstData(res)).toBe('"hello"');
    expect((await call('POST', '/decode/', { Authorization: `bearer ${TOKEN}` }, sealedBody)).status).toBe(200);
  });

  test('the token as the first path segment (the Web UI\'s endpoint http://host:port/<token>): 200, encode then decode', async () => {
    const encoded = await call('POST', `/${TOKEN}/encode`, {}, toJson([plain]));
    expect(encoded.status).toBe(200);
    const sealed = (await encoded.json()) as { payloads: unknown[] };
    const decoded = await call('POST', `/${TOKEN}/decode`, {}, JSON.stringify(sealed));
    expect(decoded.status).toBe(200);
    expect(await firstData(decoded)).toBe('"hello"');
  });

  test('past the token: 404 for an unknown route or method, 400 for a bad body', async () => {
    expect((await call('POST', `/${TOKEN}/nope`, {}, sealedBody)).status).toBe(404);
    expect((await call('GET', `/${TOKEN}/decode`)).status).toBe(404);
    expect((await call('GET', '/', { Authorization: `Bearer ${TOKEN}` })).status).toBe(404);
    expect((await call('POST', `/${TOKEN}/decode`, {}, '{"nope": 1}')).status).toBe(400);
  });

  test('a token that needs percent-encoding in a path (openssl rand -base64 makes such ones)', async () => {
    const token = 'a/b+c=d?e%f#g-and-more/';
    const odd = await startCodecServer({ codec, port: 0, origins: [], token });
    try {
      expect((await fetch(`${odd.url}/${encodeURIComponent(token)}/decode`, { method: 'POST', body: sealedBody })).status).toBe(200);
      expect((await fetch(`${odd.url}/decode`, { method: 'POST', body: sealedBody, headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);
      expect((await fetch(`${odd.url}/${token}/decode`, { method: 'POST', body: sealedBody })).status).toBe(401);
    } finally {
      await odd.close();
    }
  });

  test('CORS: the allowed origin gets the header, on answers and on preflights; another origin does not', async () => {
    const allowed = await call('POST', `/${TOKEN}/decode`, { Origin: ORIGIN }, sealedBody);
    expect([allowed.status, allowed.headers.get('access-control-allow-origin')]).toEqual([200, ORIGIN]);
    const other = await call('POST', `/${TOKEN}/decode`, { Origin: 'http://evil.example' }, sealedBody);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    // A 401 to the allowed origin is readable by the UI, so it can say what is wrong.
    const refused = await call('POST', '/decode', { Origin: ORIGIN }, sealedBody);
    expect([refused.status, refused.headers.get('access-control-allow-origin')]).toEqual([401, ORIGIN]);

    const preflight = (origin: string, route: string) => fetch(`${server.url}${route}`, { method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'content-type,x-namespace' } });
    for (const route of [`/${TOKEN}/decode`, '/decode']) {
      const ok = await preflight(ORIGIN, route);
      expect([ok.status, ok.headers.get('access-control-allow-origin')]).toEqual([204, ORIGIN]);
      expect(ok.headers.get('access-control-allow-headers')).toContain('X-Namespace');
      const no = await preflight('http://evil.example', route);
      expect([no.status, no.headers.get('access-control-allow-origin')]).toEqual([403, null]);
    }
  });

  test('random tokens: 32 URL-safe characters, new each time', () => {
    const [a, b] = [randomCodecToken(), randomCodecToken()];
    expect(a).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(a).not.toBe(b);
  });
});

describe('the commands', () => {
  /** How long a server command may take to say it is ready (`cadre dev` starts a dev server and a worker: seconds, more under load). */
  const READY_MS = 50_000;
  /** Each request of the `cadre dev` test: one that hangs fails at its own line. */
  const answered = () => ({ signal: AbortSignal.timeout(15_000) });
  function env(extra: Record<string, string>): NodeJS.ProcessEnv {
    const copy: NodeJS.ProcessEnv = { ...process.env, CADRE_LOG_LEVEL: 'ERROR', CADRE_CODEC_KEYS: KEYS, ...extra };
    delete copy.CADRE_CODEC_KEY_FILE;
    delete copy.TEMPORAL_ADDRESS;
    if (!('CADRE_CODEC_TOKEN' in extra)) delete copy.CADRE_CODEC_TOKEN;
    return copy;
  }

  /**
   * Spawns a long-running command and resolves once its stdout matches `ready`; one that has not
   * within READY_MS is stopped, and the test fails with what it said (not with jest's timeout).
   */
  function started(args: string[], environment: NodeJS.ProcessEnv, ready: RegExp): Promise<{ child: ChildProcess; stdout: string }> {
    const child = spawnCadre(args, tempWorkspace(), environment);
    let stdout = '';
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    return new Promise((resolve, reject) => {
      const late = setTimeout(() => {
        child.kill('SIGINT');
        reject(new Error(`cadre ${args[0]} did not say it was ready within ${READY_MS / 1000} s: ${stdout}${stderr}`));
      }, READY_MS);
      child.once('exit', (code) => {
        clearTimeout(late);
        reject(new Error(`cadre ${args[0]} exited early (${code}): ${stdout}${stderr}`));
      });
      child.stdout!.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        if (!ready.test(stdout)) return;
        clearTimeout(late);
        resolve({ child, stdout });
      });
    });
  }

  function stop(child: ChildProcess): Promise<number | null> {
    return new Promise((resolve) => {
      child.removeAllListeners('exit');
      if (child.exitCode !== null) return resolve(child.exitCode);
      child.once('exit', (code) => resolve(code));
      child.kill('SIGINT');
    });
  }

  test('cadre codec-server: no token, or a short one, is a one-line error naming the fix', async () => {
    const dir = tempWorkspace();
    const missing = await runCadre(['codec-server'], dir, env({}));
    expect([missing.code, missing.stderr]).toEqual([1, 'cadre: no token for the codec server: set CADRE_CODEC_TOKEN, or --token-env NAME\n']);
    const named = await runCadre(['codec-server', '--token-env', 'MY_CODEC_TOKEN'], dir, env({ CADRE_CODEC_TOKEN: TOKEN }));
    expect([named.code, named.stderr]).toEqual([1, 'cadre: no token for the codec server: set MY_CODEC_TOKEN, or --token-env NAME\n']);
    const short = await runCadre(['codec-server'], dir, env({ CADRE_CODEC_TOKEN: 'hunter2' }));
    expect([short.code, short.stderr]).toEqual([1, `cadre: CADRE_CODEC_TOKEN is too short for a codec token: at least ${MIN_TOKEN_LENGTH} characters (openssl rand -hex 24)\n`]);
    const help = await runCadre(['codec-server', '--help'], dir, env({}));
    expect(help.stdout).toMatch(/--token-env <name>[\s\S]*Authorization:\s+Bearer\s+<token>[\s\S]*\(default:\s+"CADRE_CODEC_TOKEN"\)/);
  });

  test('cadre codec-server: the token from CADRE_CODEC_TOKEN, or from the variable --token-env names', async () => {
    for (const [args, extra] of [[[], { CADRE_CODEC_TOKEN: TOKEN }], [['--token-env', 'MY_CODEC_TOKEN'], { MY_CODEC_TOKEN: TOKEN }]] as const) {
      const port = await freePort();
      const { child, stdout } = await started(['codec-server', '--port', String(port), ...args], env(extra), /temporal --codec-endpoint/);
      try {
        expect(stdout).not.toContain(TOKEN);
        const url = `http://127.0.0.1:${port}`;
        const body = toJson(await codec.encode([plain]));
        expect((await fetch(`${url}/decode`, { method: 'POST', body })).status).toBe(401);
        expect((await fetch(`${url}/decode`, { method: 'POST', body, headers: { Authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
        expect((await fetch(`${url}/${TOKEN}/decode`, { method: 'POST', body })).status).toBe(200);
      } finally {
        expect(await stop(child)).toBe(0);
      }
    }
  });

  test('cadre dev: the Web UI gets the codec endpoint with a new token in its path; without it, 401', async () => {
    const endpoints: string[] = [];
    for (let start = 0; start < 2; start++) {
      const [port, uiPort] = [await freePort(), await freePort()];
      const { child, stdout } = await started(['dev', '--port', String(port), '--ui-port', String(uiPort)], env({}), /Ctrl-C/);
      try {
        const codecUrl = /codec server:\s+(\S+)/.exec(stdout)![1];
        // What the dev server tells the Web UI: the endpoint it sends /decode requests to.
        const settings = (await (await fetch(`http://127.0.0.1:${uiPort}/api/v1/settings`, answered())).json()) as { Codec: { Endpoint: string } };
        const endpoint = settings.Codec.Endpoint;
        expect(endpoint).toMatch(new RegExp(`^${codecUrl.replace(/\./g, '\\.')}/[A-Za-z0-9_-]{32}$`));
        expect(stdout).not.toContain(endpoint);
        endpoints.push(endpoint);
        const body = toJson(await codec.encode([plain]));
        const uiOrigin = `http://127.0.0.1:${uiPort}`;
        expect((await fetch(`${codecUrl}/decode`, { method: 'POST', body, headers: { Origin: uiOrigin }, ...answered() })).status).toBe(401);
        const decoded = await fetch(`${endpoint}/decode`, { method: 'POST', body, headers: { Origin: uiOrigin }, ...answered() });
        expect([decoded.status, decoded.headers.get('access-control-allow-origin')]).toEqual([200, uiOrigin]);
        expect(await firstData(decoded)).toBe('"hello"');
      } finally {
        expect(await stop(child)).toBe(0);
      }
    }
    expect(endpoints[0].split('/').pop()).not.toBe(endpoints[1].split('/').pop());
  });
});
