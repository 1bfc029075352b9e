/**
 * egressFetch against real servers on this machine's loopback: every spelling of "here" is
 * refused before a byte is sent, opted-in ports work, and each redirect hop is checked.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { NO_EGRESS, egressFetch, type EgressFetch, type EgressPolicy } from '../../src/egress';
import { makeCertificates } from '../support/tls';
import { type TestServer, startServer, tableLookup } from '../support/egress-servers';

const lookup = tableLookup({
  'loop.example.org': ['127.0.0.1'],
  'rebind.example.org': ['93.184.216.34', '127.0.0.1'],
  'meta.example.org': ['169.254.169.254'],
  'private.example.org': ['10.0.0.7'],
});
const names = ['loop.example.org', 'rebind.example.org', 'meta.example.org', 'private.example.org', 'slow.example.org'];
const ownAddress = Object.values(os.networkInterfaces())
  .flat()
  .find((info) => info && !info.internal && info.family === 'IPv4')?.address;

async function body(response: Response): Promise<Record<string, unknown>> {
  return (await response.json()) as Record<string, unknown>;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    req.on('data', (chunk: Buffer) => (text += chunk.toString()));
    req.on('end', () => resolve(text));
  });
}

let app: TestServer;
let other: TestServer;
const fetchers: EgressFetch[] = [];
function fetcher(policy: Partial<EgressPolicy>, options: Parameters<typeof egressFetch>[1] = {}): EgressFetch {
  const f = egressFetch({ ...NO_EGRESS, allow: names, ...policy }, { lookup, ...options });
  fetchers.push(f);
  return f;
}

beforeAll(async () => {
  // Dual-stack, so 127.0.0.1, [::1] and this machine's own address all reach it.
  app = await startServer((req, res) => {
    const url = new URL(req.url!, 'http://here');
    if (url.pathname === '/hello') return void res.end('hello');
    if (url.pathname === '/hang') return;
    if (url.pathname === '/redirect') {
      res.writeHead(Number(url.searchParams.get('status') ?? 302), { location: url.searchParams.get('to')! });
      return void res.end('moved');
    }
    if (url.pathname === '/loop') {
      res.writeHead(302, { location: '/loop' });
      return void res.end();
    }
    void readBody(req).then((text) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ method: req.method, path: req.url, headers: req.headers, body: text }));
    });
  }, '::');
  other = await startServer((_req, res) => res.end('other'));
});

afterAll(async () => {
  await Promise.all(fetchers.map((f) => f.close()));
  await app.close();
  await other.close();
});

async function expectDenied(promise: Promise<unknown>, rule?: string): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect(err).toMatchObject({ type: 'EgressDenied', nonRetryable: true });
  if (rule) expect((err as ApplicationFailure).details?.[0]).toMatchObject({ rule });
  return err as ApplicationFailure;
}

describe('egressFetch refuses every way to this machine by default', () => {
  const spellings = [
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
  test.each(spellings)('http://%s:<port>/ is refused before a request is sent', async (host) => {
    const before = app.requests.length;
    const err = await expectDenied(fetcher({})(`http://${host}:${app.port}/hello`));
    expect(err.message).toMatch(/^egress denied: .* is (loopback|unspecified|this machine's own address)/);
    expect(app.requests.length).toBe(before);
  });

  test.each([
    ['169.254.169.254', 'metadata'],
    ['meta.example.org', 'metadata'],
    ['10.0.0.7', 'private'],
    ['private.example.org', 'private'],
    ['172.20.0.1', 'private'],
    ['100.64.0.1', 'carrier-grade-nat'],
    ['[fd00::1]', 'unique-local'],
    ['[64:ff9b::a00:1]', 'embedded-ipv4'],
    ['[64:ff9b::7f00:1]', 'embedded-ipv4'],
    ['not-allowed.example.org', 'allow'],
  ])('http://%s/ is refused as %s', async (host, rule) => {
    await expectDenied(fetcher({})(`http://${host}/latest/meta-data/`), rule);
  });

  test('non-http schemes are refused', async () => {
    await expectDenied(fetcher({ loopback: [app.port] })('file:///etc/passwd'), 'scheme');
  });
});

describe('egressFetch with loopback opted in per port', () => {
  test.each(['127.0.0.1', 'localhost', '[::1]', ...(ownAddress ? [ownAddress] : [])])('%s on the opted-in port works', async (host) => {
    const response = await fetcher({ loopback: [app.port] })(`http://${host}:${app.port}/hello`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('hello');
  });

  test('another loopback port is still refused', async () => {
    const err = await expectDenied(fetcher({ loopback: [app.port] })(`http://localhost:${other.port}/`), 'loopback');
    expect(err.message).toContain(`127.0.0.1:${other.port} (from "localhost"`);
    expect(err.message).toContain(`egress.loopback: [${other.port}]`);
    expect(other.requests).toEqual([]);
  });

  test('a Request object, its method, headers and body go through', async () => {
    const request = new Request(`http://127.0.0.1:${app.port}/echo`, { method: 'POST', headers: { 'x-test': 'yes' }, body: 'payload' });
    const echoed = await body(await fetcher({ loopback: [app.port] })(request));
    expect(echoed).toMatchObject({ method: 'POST', body: 'payload', headers: expect.objectContaining({ 'x-test': 'yes' }) });
  });
});

describe('egressFetch checks every redirect hop', () => {
  const base = () => `http://127.0.0.1:${app.port}`;
  const redirect = (to: string, status = 302) => `${base()}/redirect?status=${status}&to=${encodeURIComponent(to)}`;

  test('a redirect to another loopback port is refused at the hop', async () => {
    const err = await expectDenied(fetcher({ loopback: [app.port] })(redirect(`http://127.0.0.1:${other.port}/secret`)), 'loopback');
    expect(err.message).toContain(`127.0.0.1:${other.port}`);
    expect(other.requests).toEqual([]);
  });

  test('a redirect to a name that resolves to the metadata address is refused at the hop', async () => {
    await expectDenied(fetcher({ loopback: [app.port] })(redirect('http://meta.example.org/latest/meta-data/iam')), 'metadata');
  });

  test('a redirect to a spelled-out loopback address is refused', async () => {
    await expectDenied(fetcher({ loopback: [app.port] })(redirect(`http://2130706433:${other.port}/`)), 'loopback');
  });

  test('a redirect to a file: URL is refused', async () => {
    await expectDenied(fetcher({ loopback: [app.port] })(redirect('file:///etc/passwd')), 'scheme');
  });

  test('allowed hops are followed, with fetch method semantics', async () => {
    const f = fetcher({ loopback: [app.port] });
    const post = (status: number) => f(redirect('/echo', status), { method: 'POST', body: 'data', headers: { 'content-type': 'text/plain' } }).then(body);
    expect(await post(302)).toMatchObject({ method: 'GET', body: '' });
    expect((await post(302)).headers).not.toHaveProperty('content-type');
    expect(await post(301)).toMatchObject({ method: 'GET', body: '' });
    expect(await post(303)).toMatchObject({ method: 'GET', body: '' });
    expect(await post(307)).toMatchObject({ method: 'POST', body: 'data' });
    expect(await post(308)).toMatchObject({ method: 'POST', body: 'data' });
    expect(await f(redirect('/echo', 303), { method: 'PUT', body: 'x' }).then(body)).toMatchObject({ method: 'GET' });
    expect(await f(redirect('/echo', 302), { method: 'PUT', body: 'x' }).then(body)).toMatchObject({ method: 'PUT', body: 'x' });
  });

  test('credentials are dropped when a redirect changes origin, kept when it does not', async () => {
    const f = fetcher({ loopback: [app.port] });
    const headers = { authorization: 'Bearer secret', cookie: 'session=1', 'x-keep': 'kept' };
    const same = await f(redirect('/echo'), { headers }).then(body);
    expect(same.headers).toMatchObject({ authorization: 'Bearer secret', cookie: 'session=1' });
    const cross = await f(redirect(`http://localhost:${app.port}/echo`), { headers }).then(body);
    expect(cross.headers).not.toHaveProperty('authorization');
    expect(cross.headers).not.toHaveProperty('cookie');
    expect(cross.headers).toMatchObject({ 'x-keep': 'kept' });
  });

  test('redirects are bounded', async () => {
    await expect(fetcher({ loopback: [app.port] }, { maxRedirects: 3 })(`${base()}/loop`)).rejects.toMatchObject({ type: 'TooManyRedirects' });
  });

  test('redirect: "manual" returns the redirect, "error" throws', async () => {
    const f = fetcher({ loopback: [app.port] });
    const manual = await f(redirect(`http://127.0.0.1:${other.port}/`), { redirect: 'manual' });
    expect(manual.status).toBe(302);
    expect(manual.headers.get('location')).toBe(`http://127.0.0.1:${other.port}/`);
    await expect(f(redirect('/echo'), { redirect: 'error' })).rejects.toThrow(TypeError);
  });
});

describe('egressFetch aborts', () => {
  test('through init.signal while waiting for the response', async () => {
    const controller = new AbortController();
    const pending = fetcher({ loopback: [app.port] })(`http://127.0.0.1:${app.port}/hang`, { signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
  });

  test('through init.signal while the checker is still resolving', async () => {
    const f = egressFetch({ ...NO_EGRESS, allow: ['slow.example.org'] }, { lookup: () => new Promise(() => undefined), connectTimeoutMs: 500 });
    fetchers.push(f);
    const started = Date.now();
    await expect(f('http://slow.example.org/', { signal: AbortSignal.timeout(100) })).rejects.toMatchObject({ name: 'TimeoutError' });
    expect(Date.now() - started).toBeLessThan(5000);
  });

  test('a lookup that never answers times out as a connect timeout', async () => {
    const f = egressFetch({ ...NO_EGRESS, allow: ['slow.example.org'] }, { lookup: () => new Promise(() => undefined), connectTimeoutMs: 200 });
    fetchers.push(f);
    await expect(f('http://slow.example.org/')).rejects.toMatchObject({ cause: { code: 'UND_ERR_CONNECT_TIMEOUT' } });
  });

  test('an already aborted signal sends nothing', async () => {
    const before = app.requests.length;
    await expect(fetcher({ loopback: [app.port] })(`http://127.0.0.1:${app.port}/hello`, { signal: AbortSignal.abort() })).rejects.toMatchObject({ name: 'AbortError' });
    expect(app.requests.length).toBe(before);
  });
});

describe('egressFetch over TLS', () => {
  test('connects to the checked address and still verifies the certificate for the name', async () => {
    const certs = makeCertificates(mkdtempSync(path.join(os.tmpdir(), 'cadre-egress-tls-')));
    const server = https.createServer({ cert: readFileSync(certs.serverCert), key: readFileSync(certs.serverKey) }, (req, res) => res.end(`tls ${req.headers.host}`));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const f = fetcher({ loopback: [port] }, { ca: readFileSync(certs.ca) });
      const response = await f(`https://localhost:${port}/`);
      expect(await response.text()).toBe(`tls localhost:${port}`);
      // Without the CA the certificate is not trusted: TLS verification is still on.
      await expect(fetcher({ loopback: [port] })(`https://localhost:${port}/`)).rejects.toThrow(/fetch failed/);
      await expectDenied(f(`https://localhost:${other.port}/`), 'loopback');
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
