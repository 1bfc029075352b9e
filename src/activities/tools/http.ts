import type { HttpRequestParams } from '../../spec/tools';
import { ErrorTypes, permanent, transient } from '../errors';
import type { ToolContext } from './context';

export const MAX_BODY_CHARS = 512 * 1024;

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
  let response: Response;
  try {
    response = await fetch(request);
  } catch (err) {
    if (ctx.signal.aborted) throw err;
    throw transient(ErrorTypes.HttpServerError, `request to ${params.url} failed: ${(err as Error).message}`);
  }
  const full = await response.text();
  // Keep step outputs well under Temporal's 2 MB payload limit.
  const text = full.length > MAX_BODY_CHARS ? `${full.slice(0, MAX_BODY_CHARS)}\n[cadre: ${full.length - MAX_BODY_CHARS} more characters not kept]` : full;
  let json: unknown;
  try {
    json = text === full ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  const out = { status: response.status, headers: Object.fromEntries(response.headers), body: text, ...(json !== undefined && { json }) };
  if (response.status >= 400) {
    const message = `${params.method ?? 'GET'} ${params.url} answered ${response.status}`;
    const retryable = response.status >= 500 || response.status === 408 || response.status === 429;
    throw retryable ? transient(ErrorTypes.HttpServerError, message, out) : permanent(ErrorTypes.HttpClientError, message, out);
  }
  return out;
}
