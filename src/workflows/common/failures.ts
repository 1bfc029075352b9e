/** Reading activity failures in workflow code: was it a timeout, how many attempts did it take. */
import { ActivityFailure, ApplicationFailure, TemporalFailure, TimeoutFailure } from '@temporalio/workflow';
import type { ToolFailureDetails } from '../../activities';
import { ExpressionError } from '../../plan-format/expressions';
import { TemplateError } from '../../plan-format/templates';

export interface StepError {
  message: string;
  timedOut: boolean;
  attempts: number;
  /** The failure's type, when it had one (`BudgetExhausted`: a budget stopped the step). */
  type?: string;
}

/** A step failure found by workflow code itself (bad options, a list that is not one): no tool ran. */
export class StepFailedError extends Error {
  constructor(readonly failure: StepError) {
    super(failure.message);
  }
}

/** A step's error is a summary shown in records and the Web UI; whole outputs stay in the failure's details. */
export const MAX_ERROR_CHARS = 4000;

/** Thrown by workflow-side waits (ask, sleep) that run past the step's timeout. */
export class StepTimeout extends Error {
  readonly name = 'StepTimeout';
}

export function describeFailure(err: unknown): StepError {
  const described = describe(err);
  if (described.message.length <= MAX_ERROR_CHARS) return described;
  return { ...described, message: `${described.message.slice(0, MAX_ERROR_CHARS)}… (${described.message.length - MAX_ERROR_CHARS} more characters)` };
}

function describe(err: unknown): StepError {
  if (err instanceof StepFailedError) return err.failure;
  if (err instanceof StepTimeout) return { message: err.message, timedOut: true, attempts: 0 };
  // The step's own templates or condition, read by the workflow: no tool ran.
  if (err instanceof TemplateError || err instanceof ExpressionError) return { message: err.message, timedOut: false, attempts: 0 };
  const timeout = findCause(err, (e) => e instanceof TimeoutFailure) as TimeoutFailure | undefined;
  // A heartbeat timeout is a lost worker, not a slow step: that is a failure.
  const timedOut = timeout !== undefined && timeout.timeoutType !== 'HEARTBEAT';
  const app = findCause(err, (e) => e instanceof ApplicationFailure) as ApplicationFailure | undefined;
  const details = app?.details?.[0] as ToolFailureDetails | undefined;
  const attempts = typeof details?.attempt === 'number' ? details.attempt : 1;
  if (timedOut) {
    const last = app ? ` (last error: ${app.message})` : '';
    return { message: `timed out${last}`, timedOut, attempts };
  }
  if (app) return { message: `${app.type ?? 'Error'}: ${app.message}`, timedOut, attempts, ...(app.type && { type: app.type }) };
  if (err instanceof ActivityFailure && err.cause) return { message: err.cause.message, timedOut, attempts };
  return { message: err instanceof Error ? err.message : String(err), timedOut, attempts };
}

/** The first error in `err`'s chain of causes that passes `test`. */
export function findCause(err: unknown, test: (e: Error) => boolean): Error | undefined {
  let cursor: unknown = err;
  for (let depth = 0; cursor instanceof Error && depth < 10; depth++) {
    if (test(cursor)) return cursor;
    cursor = cursor instanceof TemporalFailure || cursor instanceof Error ? (cursor as { cause?: unknown }).cause : undefined;
  }
  return undefined;
}

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
