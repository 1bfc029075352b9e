/**
 * What a session's message may be, and how a session folds old messages into a summary: pure
 * functions the session workflow (workflows/session) calls.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { ModelMessageInput } from '../providers/model-turn';

/** A message is text a person typed or pasted: longer input belongs in a file the agent reads. */
export const MAX_MESSAGE_CHARS = 32 * 1024;

export const SUMMARY_SYSTEM =
  'You keep the memory of a long conversation. Write a short summary (at most 300 words) of the earlier summary and the messages given: facts, decisions, names, numbers and open questions. No preamble.';

export function validateMessage(text: unknown, ending: boolean): void {
  const reject = (message: string) => {
    throw ApplicationFailure.nonRetryable(message, 'MessageRejected');
  };
  if (ending) reject('the session is ending; start another');
  if (typeof text !== 'string' || text.trim() === '') reject('a message is non-empty text');
  if ((text as string).length > MAX_MESSAGE_CHARS) reject(`the message has ${(text as string).length} characters; at most ${MAX_MESSAGE_CHARS} (put long text in a file the agent can read)`);
}

/** The first user message at or after `from`: folding there keeps tool results with their calls. */
export function nextUser(messages: ModelMessageInput[], from: number): number {
  let i = Math.max(0, from);
  while (i < messages.length && messages[i].role !== 'user') i++;
  return i;
}

/** The folded messages as text for the summariser: roles and words, long tool results cut. */
export function summaryRequest(previous: string | undefined, folded: ModelMessageInput[]): string {
  const line = (m: ModelMessageInput): string => {
    if (m.role === 'user') return `user: ${m.content}`;
    if (m.role === 'assistant') return `assistant: ${m.content ?? ''}${m.toolCalls?.length ? ` [called ${m.toolCalls.map((c) => c.name).join(', ')}]` : ''}`;
    const result = typeof m.result === 'string' ? m.result : JSON.stringify(m.result);
    return `tool ${m.toolName}: ${(result ?? '').slice(0, 2000)}`;
  };
  return [previous ? `Earlier summary: ${previous}` : 'There is no earlier summary.', '', 'Messages:', ...folded.map(line)].join('\n');
}
