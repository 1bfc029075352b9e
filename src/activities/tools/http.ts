import { ApplicationFailure } from '@temporalio/common';
import { egressFetch } from '../../egress';
import type { HttpRequestParams } from '../../plan-format/tools';
import { ErrorTypes, permanent, transient } from '../../errors/application-failures';
import { CappedBytes, truncation } from './capped';
import type { ToolContext } from './context';

export async function httpRequest(params: HttpRequestParams, ctx: ToolContext) {
  const hasBody = params.body !== undefined && params.method !== 'GET' && params.method !== 'HEAD';
  const headers: Record<string, string> = { ...params.headers };
  let body: string | undefined;
  if (hasBody) {
    body = typeof params.body === 'string' ? params.body : JSON.stringify(params.body);
    if (typeof params.body !== 'string' && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
      headers['content-type'] = 'application/json';
    }
  }
  let request: Request;
  try {
    // Checks headers and method without touching the network: what fails here is the step's input.
    request = new Request(params.url, { method: params.method ?? (hasBody ? 'POST' : 'GET'), headers, body, signal: ctx.signal });
  } catch (err) {
    throw permanent(ErrorTypes.BadToolInput, `bad parameters for http.request: ${(err as Error).message}`);
  }
  const kept = new CappedBytes(ctx.limits.bodyBytes);
  // Only what the plan's egress allows, checked on the address connected to and again at every redirect.
  const fetch = egressFetch(ctx.sandbox.profile.egress, { ...(ctx.sandbox.lookup && { lookup: ctx.sandbox.lookup }) });
  let response: Response;
  try {
    response = await fetch(request);
    // Read to the end, keeping only the cap in memory, so the output can say how much was dropped.
    if (response.body) for await (const chunk of response.body) kept.push(Buffer.from(chunk));
  } catch (err) {
    if (ctx.signal.aborted || err instanceof ApplicationFailure) throw err;
    throw transient(ErrorTypes.HttpServerError, `request to ${params.url} failed: ${describe(err)}`);
  } finally {
    await fetch.close().catch(() => undefined);
  }
  const text = kept.finish();
  let json: unknown;
  try {
    json = text.dropped > 0 ? undefined : JSON.parse(text.text);
  } catch {
    json = undefined;
  }
  const out = { status: response.status, headers: Object.fromEntries(response.headers), body: text.text, ...(json !== undefined && { json }), ...truncation({ body: text }) };
  if (response.status >= 400) {
    const message = `${params.method ?? 'GET'} ${params.url} answered ${response.status}`;
    const retryable = response.status >= 500 || response.status === 408 || response.status === 429;
    throw retryable ? transient(ErrorTypes.HttpServerError, message, out) : permanent(ErrorTypes.HttpClientError, message, out);
  }
  return out;
}

/** fetch says only "fetch failed": the cause says why (ECONNREFUSED, a TLS error). */
function describe(err: unknown): string {
  const cause = (err as { cause?: { message?: string; code?: string } }).cause;
  const message = (err as Error).message;
  return cause?.message && cause.message !== message ? `${message}: ${cause.message}` : message;
}
