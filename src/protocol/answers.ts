/**
 * What an answer to a wait may be (docs/protocol.md): a non-empty string within a size, one of the
 * wait's choices, `extend:<duration>` where a timeout can be extended, `deny:<reason>` for an
 * approval, `extend=<more>` or `stop` for a budget. The run's `answer` update checks it before it
 * reaches history; clients may check it first. Pure.
 */
import { durationMs, isDuration } from '../plan-format/duration';
import { checkDurationMs } from '../plan-format/limits';
import { parseBudgetAnswer } from './budget';
import type { Waiting } from './definitions';

/** Longer answers belong in a file in the workspace; this keeps one answer far under Temporal's payload limit. */
export const MAX_ANSWER_CHARS = 256 * 1024;

/** Why `value` cannot answer `waiting`; undefined when it can. */
export function answerProblem(waiting: Pick<Waiting, 'kind' | 'choices'>, value: string): string | undefined {
  if (waiting.kind === 'budget') return parseBudgetAnswer(value) ? undefined : `"${shorten(value)}": answer extend=<more> (a number above 0) or stop`;
  if (!waiting.choices) return undefined;
  const { choice, extra } = splitAnswer(value);
  if (!waiting.choices.includes(waiting.kind === 'ask' ? value : choice)) return `"${shorten(value)}" is not one of: ${waiting.choices.join(', ')}`;
  if (waiting.kind === 'approval') return extra !== undefined && choice !== 'deny' ? `"${shorten(value)}": only deny takes a reason, as in deny:not on main` : undefined;
  if (waiting.kind === 'ask' || extra === undefined) return undefined;
  if (choice !== 'extend' || !isDuration(extra)) return `"${shorten(value)}": only extend takes a duration, as in extend:10m`;
  const problem = checkDurationMs(durationMs(extra), 'extend')[0];
  return problem && `"${shorten(value)}": ${problem.message}`;
}

/** Why `value` is no answer at all (not a string, empty, too long); undefined when it is one. */
export function answerTextProblem(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length === 0) return 'the answer must be a non-empty string';
  return value.length > MAX_ANSWER_CHARS ? `the answer has ${value.length} characters; at most ${MAX_ANSWER_CHARS} (put long text in a file in the workspace)` : undefined;
}

/** `choice[:extra]`: a decision and what it carries (`extend:10m`, `deny:not on main`); the extra may hold colons. */
export function splitAnswer(value: string): { choice: string; extra?: string } {
  const colon = value.indexOf(':');
  return colon < 0 ? { choice: value } : { choice: value.slice(0, colon), extra: value.slice(colon + 1) };
}

export function shorten(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
