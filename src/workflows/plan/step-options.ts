/** Activity options of a step, from its plan settings. Pure. */
import type { ActivityOptions, LocalActivityOptions, RetryPolicy } from '@temporalio/workflow';
import { durationMs } from '../../plan-format/duration';
import { checkActivityOptions } from '../../plan-format/limits';
import type { CompiledStep } from '../../plan-format/types';
import { StepFailedError } from '../common/failures';

/** Used when neither the step nor the plan's defaults set a timeout. */
export const DEFAULT_STEP_TIMEOUT = '10m';
export const DEFAULT_MAX_ATTEMPTS = 3;
/** How long a silent worker may hold a tool before the server retries it elsewhere. */
export const HEARTBEAT_TIMEOUT_MS = 10_000;
export const COMPENSATION_TIMEOUT = '5m';

/**
 * A step's tool call: its timeout bounds all attempts (schedule-to-close), its retry policy is the
 * plan's. Checked against Temporal's limits here too, not only by the validator: the server answers
 * bad options by failing the workflow task, forever; a StepFailedError fails the step with the reason.
 */
export function toolActivityOptions(step: CompiledStep, timeout: string, summary: string): ActivityOptions & { heartbeatTimeout: number } {
  const timeoutMs = durationMs(timeout);
  const options = {
    scheduleToCloseTimeout: timeoutMs,
    heartbeatTimeout: Math.min(HEARTBEAT_TIMEOUT_MS, timeoutMs),
    summary,
    retry: retryPolicy(step, DEFAULT_MAX_ATTEMPTS),
  };
  const problems = checkActivityOptions({ ...options, activityId: summary });
  if (problems.length > 0) {
    const message = `cannot schedule ${summary}: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`;
    throw new StepFailedError({ message, timedOut: false, attempts: 0 });
  }
  return options;
}

/** The step's retry policy; `onFailure: retry` retries without limit. */
export function retryPolicy(step: CompiledStep, defaultAttempts: number): RetryPolicy & { initialInterval: number; maximumInterval?: number } {
  const retry = step.retry;
  return {
    maximumAttempts: step.onFailure === 'retry' ? 0 : (retry.maximumAttempts ?? defaultAttempts),
    initialInterval: durationMs(retry.initialInterval ?? '1s'),
    backoffCoefficient: retry.backoffCoefficient ?? 2,
    ...(retry.maximumInterval && { maximumInterval: durationMs(retry.maximumInterval) }),
    ...(retry.nonRetryableErrorTypes && { nonRetryableErrorTypes: retry.nonRetryableErrorTypes }),
  };
}

/**
 * Tools cheap enough to run as local activities: in the worker that runs the workflow task, with
 * no task queue round trip (a few ms a step instead of ~10). Their durability is coarser: a result
 * is recorded when the workflow task completes, so a worker that dies mid-task runs the tool again,
 * and they cannot heartbeat. A step opts in with `local: true`.
 */
export const LOCAL_TOOLS: ReadonlySet<string> = new Set(['fs.read', 'fs.write', 'fs.edit']);

export function runsLocally(step: CompiledStep, tool: string): boolean {
  return step.local ?? LOCAL_TOOLS.has(tool);
}

export function localToolOptions(step: CompiledStep, timeout: string, summary: string): LocalActivityOptions {
  const { scheduleToCloseTimeout, retry } = toolActivityOptions(step, timeout, summary);
  return { scheduleToCloseTimeout, retry, summary };
}

export function compensationActivityOptions(summary: string): ActivityOptions & { heartbeatTimeout: number } {
  return {
    scheduleToCloseTimeout: COMPENSATION_TIMEOUT,
    heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
    summary,
    retry: { maximumAttempts: DEFAULT_MAX_ATTEMPTS },
  };
}
