/**
 * A local endpoint's context window: what it holds (`contextTokens`, or asked of the server:
 * llama.cpp's /props, Ollama's /api/show), and a conversation made to fit it. cadre never sends
 * more than fits: the oldest tool results are shortened first, each saying so to the model, and
 * only a conversation that cannot fit even then fails, with ModelContextTooLong. A silent cut by
 * the server (Ollama's 2k default) costs far more than the words shortened here.
 *
 * Tokens are estimated, not counted (no tokenizer of every model is at hand): a UTF-8 byte count
 * over three, which is more than BPE tokenizers give for English and code (3.5–4.5 bytes a token)
 * and for other scripts (two to three bytes a character, about a token each).
 */
import { ErrorTypes, permanent } from '../errors/application-failures';
import type { CompatibleEndpoint } from './config';

const BYTES_PER_TOKEN = 3;
/** A message's framing in the chat template (role markers, separators). */
const TOKENS_PER_MESSAGE = 8;
/** Output reserved when the request and endpoint set no maxOutputTokens: at most a quarter of the window. */
const DEFAULT_RESERVE = 2048;
/** Ollama's context when a model's parameters set none (its long-standing default). */
const OLLAMA_DEFAULT_CONTEXT = 2048;
const ASK_TIMEOUT_MS = 5000;

export function estimateTokens(text: string): number {
  return Math.ceil(Buffer.byteLength(text) / BYTES_PER_TOKEN);
}

export interface FitMessage {
  role: string;
  content?: string;
  toolCalls?: unknown[];
  result?: unknown;
  toolName?: string;
  toolCallId?: string;
  isError?: boolean;
}

export interface Shortened {
  /** Tool results shortened, oldest first. */
  toolResults: number;
  /** Estimated tokens taken out. */
  tokens: number;
}

/**
 * The messages, shortened to fit `window` tokens with `reserve` left for the answer: tool results
 * from the oldest on become a note (with their first lines), until the rest fits.
 */
export function fitToWindow<M extends FitMessage>(
  parts: { system?: string; tools?: unknown; messages: M[] },
  window: number,
  reserve: number,
  label: string,
): { messages: M[]; shortened?: Shortened } {
  const fixed = estimateTokens(parts.system ?? '') + estimateTokens(JSON.stringify(parts.tools ?? []));
  const sizes = parts.messages.map(messageTokens);
  const budget = window - reserve;
  let total = fixed + sizes.reduce((a, b) => a + b, 0);
  if (total <= budget) return { messages: parts.messages };
  const messages = [...parts.messages];
  let toolResults = 0;
  let saved = 0;
  for (let i = 0; i < messages.length && total > budget; i++) {
    const message = messages[i];
    if (message.role !== 'tool') continue;
    const short = { ...message, result: shortenedResult(message.result, message.toolName ?? 'the tool') };
    const size = messageTokens(short);
    if (size >= sizes[i]) continue;
    messages[i] = short;
    total -= sizes[i] - size;
    saved += sizes[i] - size;
    toolResults++;
  }
  if (total > budget) {
    throw permanent(
      ErrorTypes.ModelContextTooLong,
      `${label}: the conversation needs about ${total} tokens with every tool result shortened, and the model's context holds ${window} (${reserve} kept for the answer): ` +
        'shorten the prompt, ask for less at once, or raise the server\'s context (contextTokens of the endpoint)',
    );
  }
  return { messages, shortened: { toolResults, tokens: saved } };
}

const HEAD_CHARS = 200;

/** A tool result cut to its start and a note saying so, which the model reads in its place. */
function shortenedResult(result: unknown, tool: string): string {
  const text = typeof result === 'string' ? result : JSON.stringify(result) ?? '';
  const head = text.length > HEAD_CHARS ? `${text.slice(0, HEAD_CHARS)}…` : text;
  return `[shortened by cadre to fit the model's context: ${text.length} characters of ${tool}'s result, of which the start is: ${head}] Call ${tool} again if you need the rest.`;
}

function messageTokens(message: FitMessage): number {
  const body = message.content ?? '';
  const calls = message.toolCalls ? JSON.stringify(message.toolCalls) : '';
  const result = message.result === undefined ? '' : typeof message.result === 'string' ? message.result : JSON.stringify(message.result) ?? '';
  return TOKENS_PER_MESSAGE + estimateTokens(body) + estimateTokens(calls) + estimateTokens(result);
}

/** Tokens kept for the answer: what the request or endpoint allows it, else a default no bigger than a quarter of the window. */
export function outputReserve(window: number, maxOutputTokens: number | undefined): number {
  return maxOutputTokens ?? Math.min(DEFAULT_RESERVE, Math.floor(window / 4));
}

const asked = new Map<string, Promise<number | undefined>>();

/** The endpoint's context in tokens: as configured, else as its server says (asked once per worker), else unknown. */
export function contextTokens(endpoint: CompatibleEndpoint, model: string, fetchImpl: typeof fetch = fetch): Promise<number | undefined> {
  if (endpoint.contextTokens !== undefined) return Promise.resolve(endpoint.contextTokens);
  const key = `${endpoint.baseURL} ${model}`;
  let answer = asked.get(key);
  if (!answer) {
    answer = askServer(endpoint.baseURL, model, fetchImpl);
    asked.set(key, answer);
  }
  return answer;
}

/** llama.cpp's /props (`n_ctx`), then Ollama's /api/show (`num_ctx`, or Ollama's default); undefined when neither answers. */
async function askServer(baseURL: string, model: string, fetchImpl: typeof fetch): Promise<number | undefined> {
  const root = baseURL.replace(/\/+$/, '').replace(/\/v1$/, '');
  const json = async (url: string, init?: RequestInit): Promise<Record<string, unknown> | undefined> => {
    try {
      const res = await fetchImpl(url, { ...init, signal: AbortSignal.timeout(ASK_TIMEOUT_MS) });
      return res.ok ? ((await res.json()) as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  };
  const props = await json(`${root}/props`);
  const settings = props?.default_generation_settings as { n_ctx?: unknown } | undefined;
  const nCtx = settings?.n_ctx ?? props?.n_ctx;
  if (typeof nCtx === 'number' && nCtx > 0) return nCtx;
  const show = await json(`${root}/api/show`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model }) });
  if (!show) return undefined;
  const numCtx = /(?:^|\n)\s*num_ctx\s+(\d+)/.exec(typeof show.parameters === 'string' ? show.parameters : '');
  return numCtx ? Number(numCtx[1]) : OLLAMA_DEFAULT_CONTEXT;
}
