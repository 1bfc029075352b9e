/**
 * Provider errors as ApplicationFailures, so Temporal's retry policy (not the AI SDK's, which
 * runs with maxRetries: 0) decides what is retried and when.
 */
import { APICallError, RetryError } from 'ai';
import { ApplicationFailure } from '@temporalio/common';
import { ErrorTypes, permanent, transient } from '../errors/application-failures';
import type { ProviderName } from './config';

/** The fix for a refused key, per provider. */
const KEY_HINT: Record<ProviderName, string> = {
  openai: 'set OPENAI_API_KEY to a valid key',
  anthropic: 'set ANTHROPIC_API_KEY to a valid key',
  'openai-compatible': "set the endpoint's apiKeyEnv variable to a valid key",
  scripted: 'scripted models need no key',
};

export interface ErrorContext {
  provider: ProviderName;
  model: string;
  /** Strings that must never leave the activity (API keys). */
  secrets: string[];
}

/** Turns anything a provider call threw into an ApplicationFailure whose type tells retry from give up. */
export function classifyProviderError(err: unknown, ctx: ErrorContext): unknown {
  if (err instanceof ApplicationFailure) return scrub(err, ctx.secrets);
  const cause = RetryError.isInstance(err) ? err.lastError : err;
  if (isAbort(cause)) return cause; // cancellation travels as it is
  const label = `${ctx.provider}:${ctx.model}`;
  if (APICallError.isInstance(cause)) {
    const status = cause.statusCode;
    const said = redact(firstLine(cause.message), ctx.secrets);
    const details = { status };
    if (status === 429) {
      const delayMs = retryAfterMs(cause.responseHeaders);
      return ApplicationFailure.create({
        type: ErrorTypes.ModelRateLimited,
        message: `${label}: rate limited (429)${delayMs === undefined ? '' : `, retry after ${delayMs / 1000} s`}: ${said}`,
        nonRetryable: false,
        details: [details],
        ...(delayMs !== undefined && { nextRetryDelay: delayMs }),
      });
    }
    // A success whose body cannot be read (cut short, HTML from a proxy): the next answer may be whole.
    if (status !== undefined && status >= 200 && status < 300) {
      return transient(ErrorTypes.ModelUnavailable, `${label}: the provider answered ${status} with a response that cannot be read: ${said}`, details);
    }
    if (status === 401 || status === 403) return permanent(ErrorTypes.ModelAuthFailed, `${label}: the provider refused the API key (${status}): ${KEY_HINT[ctx.provider]}`, details);
    if (isContextTooLong(cause)) return permanent(ErrorTypes.ModelContextTooLong, `${label}: the conversation exceeds the model's context window: shorten it or use a model with a longer context (${said})`, details);
    if (status === 404) return permanent(ErrorTypes.ModelNotFound, `${label}: unknown model or endpoint (404): check the model name and base URL (${said})`, details);
    if (status === undefined || status >= 500 || cause.isRetryable) return transient(ErrorTypes.ModelUnavailable, `${label}: provider unavailable (${status ?? 'no response'}): ${said}`, details);
    return permanent(ErrorTypes.ModelRequestRejected, `${label}: request rejected (${status}): ${said}`, details);
  }
  if (isErrorLike(cause) && UNREADABLE_RESPONSES.has(cause.name)) return transient(ErrorTypes.ModelUnavailable, `${label}: the provider's response cannot be read: ${redact(firstLine(cause.message), ctx.secrets)}`);
  if (isErrorLike(cause) && CALLER_ERRORS.has(cause.name)) return permanent(ErrorTypes.BadModelRequest, `${label}: ${redact(firstLine(cause.message), ctx.secrets)}`);
  if (isNetworkError(cause)) return transient(ErrorTypes.ModelUnavailable, `${label}: provider unreachable: ${redact(describe(cause), ctx.secrets)}`);
  // Anything else is a bug or a response we do not understand; retrying may help, and the message says what it was.
  const error = isErrorLike(cause) ? cause : new Error(String(cause));
  return transient(error.name || 'Error', `${label}: ${redact(firstLine(error.message), ctx.secrets)}`);
}

/** AI SDK errors that say the request itself cannot be made: the same request would fail again. */
const CALLER_ERRORS = new Set(['AI_InvalidPromptError', 'AI_InvalidArgumentError', 'AI_UnsupportedFunctionalityError', 'AI_UnsupportedModelVersionError', 'AI_InvalidMessageRoleError']);

/** AI SDK errors about a response it could not parse or that lacks what a response holds: the next one may be whole. */
// NoOutputGenerated: a stream that ended before any answer (a cut or non-stream 200).
const UNREADABLE_RESPONSES = new Set(['AI_JSONParseError', 'AI_TypeValidationError', 'AI_EmptyResponseBodyError', 'AI_InvalidResponseDataError', 'AI_NoOutputGeneratedError']);

/** A header's word is not trusted beyond this: an activity's own timeouts bound the wait anyway. */
const MAX_RETRY_AFTER_MS = 60 * 60 * 1000;

/** Retry-After as milliseconds: `retry-after-ms` (OpenAI), else delay-seconds or an HTTP date (RFC 9110 §10.2.3). */
export function retryAfterMs(headers: Record<string, string> | undefined, now = Date.now()): number | undefined {
  const header = (wanted: string) => headers && Object.entries(headers).find(([name]) => name.toLowerCase() === wanted)?.[1]?.trim();
  const ms = header('retry-after-ms');
  if (ms && /^\d+(\.\d+)?$/.test(ms)) return Math.min(MAX_RETRY_AFTER_MS, Math.round(Number(ms)));
  const value = header('retry-after');
  if (!value) return undefined;
  if (/^\d+(\.\d+)?$/.test(value)) return Math.min(MAX_RETRY_AFTER_MS, Math.round(Number(value) * 1000));
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.min(MAX_RETRY_AFTER_MS, Math.max(0, date - now));
}

/** Replaces every secret in `text`; keys are long and random, so a plain search is exact. */
export function redact(text: string, secrets: string[]): string {
  return secrets.reduce((out, secret) => (secret.length >= 4 ? out.split(secret).join('[redacted]') : out), text);
}

function scrub(failure: ApplicationFailure, secrets: string[]): ApplicationFailure {
  const message = redact(failure.message, secrets);
  if (message === failure.message) return failure;
  return ApplicationFailure.create({ type: failure.type ?? undefined, message, nonRetryable: failure.nonRetryable ?? false, details: failure.details ?? [] });
}

function isContextTooLong(err: APICallError): boolean {
  const text = `${err.message} ${err.responseBody ?? ''}`;
  // llama.cpp's server: "the request exceeds the available context size" (exceed_context_size_error).
  return /context_length_exceeded|context length|context window|context size|prompt is too long|too many tokens/i.test(text);
}

// Shapes, not instanceof: fetch's errors may come from another realm (Node's undici, jest's vm).
function isNetworkError(err: unknown): boolean {
  if (!isErrorLike(err)) return false;
  const code = (err as { code?: string }).code ?? (err.cause as { code?: string } | undefined)?.code;
  return err.message === 'fetch failed' || /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|UND_ERR_)/.test(code ?? '');
}

function isErrorLike(err: unknown): err is Error {
  return typeof err === 'object' && err !== null && typeof (err as Error).message === 'string';
}

function isAbort(err: unknown): boolean {
  return isErrorLike(err) && typeof err.name === 'string' && (err.name === 'AbortError' || err.name.includes('Cancel'));
}

function describe(err: unknown): string {
  const cause = (err as Error).cause as Error | undefined;
  return `${(err as Error).message}${cause?.message ? ` (${cause.message})` : ''}`;
}

function firstLine(text: string): string {
  const line = text.split('\n')[0];
  return line.length > 300 ? `${line.slice(0, 300)}...` : line;
}
