/**
 * A `fetch` that reaches only what an egress policy allows. Every connection goes through
 * the checker inside undici's connector, and the socket is opened to the address the checker
 * returned, so a name cannot resolve to one address for the check and another for the connect.
 * Redirects are followed here, not by undici, so each hop is checked before it is followed.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { Agent, buildConnector } from 'undici';
import { checkDestination, egressDenied, isEgressDenied, type EgressLookup } from './check';
import type { EgressPolicy } from './policy';

export const TOO_MANY_REDIRECTS = 'TooManyRedirects';

export interface EgressFetchOptions {
  lookup?: EgressLookup;
  /** Redirects followed before giving up (fetch's own limit is 20). */
  maxRedirects?: number;
  /** Milliseconds to open a connection, the checker's DNS lookup included. */
  connectTimeoutMs?: number;
  /** Certificate authorities to trust instead of Node's (tests, private CAs). */
  ca?: string | Buffer | (string | Buffer)[];
}

/** A fetch-compatible function; `close()` ends its pooled connections. */
export type EgressFetch = ((input: string | URL | Request, init?: RequestInit) => Promise<Response>) & { close(): Promise<void> };

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
// Headers that describe a request body: dropped with the body when a redirect turns the request into a GET.
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'];
// Credentials that must not follow a redirect to another origin.
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];

type Undici = typeof import('undici');
let undici: Promise<Undici> | undefined;
/** undici (110 modules, 60 ms) loads with a process's first fetch, not with every worker and command. */
const loadUndici = () => (undici ??= import('undici'));

export function egressFetch(policy: EgressPolicy, options: EgressFetchOptions = {}): EgressFetch {
  const maxRedirects = options.maxRedirects ?? 10;
  let agent: Promise<Agent> | undefined;
  const pool = () => (agent ??= loadUndici().then(({ Agent, buildConnector }) => new Agent({ connect: checkedConnector(buildConnector, policy, options), connectTimeout: options.connectTimeoutMs })));

  const run = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    // The platform's Request validates method, headers and body as fetch does, and turns any
    // body into bytes that a 307/308 redirect can send again.
    const request = new Request(input, init);
    let url = new URL(request.url);
    let method = request.method;
    const headers = new Headers(request.headers);
    let body: Uint8Array | undefined = request.body ? new Uint8Array(await request.arrayBuffer()) : undefined;
    const signal = request.signal;
    const [{ fetch: undiciFetch }, dispatcher] = await Promise.all([loadUndici(), pool()]);

    for (let redirects = 0; ; redirects++) {
      refuseOtherSchemes(url);
      let response: Awaited<ReturnType<Undici['fetch']>>;
      try {
        response = await undiciFetch(url, { method, headers: [...headers], body, redirect: 'manual', signal, dispatcher });
      } catch (err) {
        throw unwrapConnectError(err);
      }
      const location = response.headers.get('location');
      if (!REDIRECT_STATUSES.has(response.status) || location === null || request.redirect === 'manual') return response as unknown as Response;
      await response.body?.cancel();
      if (request.redirect === 'error') throw new TypeError(`fetch failed: ${url.href} redirected to ${location} and redirect is "error"`);
      let next: URL;
      try {
        next = new URL(location, url);
      } catch {
        throw new TypeError(`fetch failed: ${url.href} redirected to an invalid location ${JSON.stringify(location)}`);
      }
      if (redirects >= maxRedirects) {
        throw ApplicationFailure.nonRetryable(`fetch failed: more than ${maxRedirects} redirects, the last from ${url.href} to ${next.href}`, TOO_MANY_REDIRECTS);
      }
      // As fetch does: 303 turns anything but HEAD into a GET, 301/302 turn a POST into a GET.
      if ((response.status === 303 && method !== 'GET' && method !== 'HEAD') || ((response.status === 301 || response.status === 302) && method === 'POST')) {
        method = 'GET';
        body = undefined;
        for (const name of BODY_HEADERS) headers.delete(name);
      }
      if (next.origin !== url.origin) for (const name of CREDENTIAL_HEADERS) headers.delete(name);
      url = next;
    }
  };
  return Object.assign(run, { close: async () => agent && (await agent).close() });
}

/** undici's connector, opening the socket to the address the checker returned (and TLS still verifying the name). */
function checkedConnector(build: typeof buildConnector, policy: EgressPolicy, options: EgressFetchOptions): buildConnector.connector {
  const timeoutMs = options.connectTimeoutMs ?? 10_000;
  const connect = build({ timeout: timeoutMs, ...(options.ca !== undefined && { ca: options.ca }) });
  return (target, callback) => {
    const port = target.port ? Number(target.port) : target.protocol === 'https:' ? 443 : 80;
    // undici waits for this callback however long it takes, aborted or not: bound the lookup.
    let settled = false;
    const timer = setTimeout(() => settle(Object.assign(new Error(`connect to ${target.hostname}:${port} timed out after ${timeoutMs}ms (resolving it)`), { code: 'UND_ERR_CONNECT_TIMEOUT' })), timeoutMs);
    timer.unref();
    function settle(err: Error | undefined, address?: string): void {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // `host` keeps the name, from which undici takes the TLS server name (SNI and certificate check).
      if (err) callback(err, null);
      else connect({ ...target, hostname: address! }, callback);
    }
    checkDestination(target.hostname, port, policy, { lookup: options.lookup }).then(
      (checked) => settle(undefined, checked.address),
      (err: Error) => settle(err),
    );
  };
}

function refuseOtherSchemes(url: URL): void {
  if (url.protocol === 'http:' || url.protocol === 'https:') return;
  throw egressDenied(`egress denied: ${url.protocol} URLs cannot be fetched (only http: and https:)`, { host: url.hostname, port: Number(url.port) || 0, rule: 'scheme' });
}

/** undici reports a failed connect as `TypeError: fetch failed` with the reason as its cause; a refusal is worth more than that. */
function unwrapConnectError(err: unknown): unknown {
  if (err instanceof TypeError && isEgressDenied(err.cause)) return err.cause;
  return err;
}
