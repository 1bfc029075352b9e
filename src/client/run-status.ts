/**
 * A run's status as clients show it. While a run is open, the workflow's own status (its
 * `diagnostics` query, its `CadreStatus` search attribute) says what it does; once Temporal has
 * closed it, Temporal's execution status says how it ended, because a run terminated or timed
 * out never updates its own.
 */
import type { WorkflowExecutionInfo, WorkflowExecutionStatusName } from '@temporalio/client';
import type { RunStatus } from '../protocol/definitions';
import { CadreStatus } from '../protocol/search-attributes';
import { UsageError } from '../errors/cadre-error';

const OPEN_STATUSES: readonly string[] = ['running', 'paused', 'waiting'] satisfies RunStatus[];

/** How `list --status` finds runs: open ones by cadre's status, ended ones by Temporal's alone. */
const LIST_FILTERS: Record<RunStatus, string> = {
  running: 'ExecutionStatus = "Running" AND CadreStatus = "running"',
  paused: 'ExecutionStatus = "Running" AND CadreStatus = "paused"',
  waiting: 'ExecutionStatus = "Running" AND CadreStatus = "waiting"',
  completed: 'ExecutionStatus = "Completed"',
  // A run a budget stopped fails in Temporal's eyes; cadre's own status tells it apart.
  failed: 'ExecutionStatus = "Failed" AND (CadreStatus IS NULL OR CadreStatus != "budget_exhausted")',
  budget_exhausted: 'ExecutionStatus = "Failed" AND CadreStatus = "budget_exhausted"',
  cancelled: 'ExecutionStatus = "Canceled"',
  terminated: 'ExecutionStatus = "Terminated"',
  timed_out: 'ExecutionStatus = "TimedOut"',
};

export const RUN_STATUSES = Object.keys(LIST_FILTERS) as RunStatus[];

const ENDED: Partial<Record<WorkflowExecutionStatusName, RunStatus>> = {
  COMPLETED: 'completed',
  FAILED: 'failed',
  CANCELLED: 'cancelled',
  TERMINATED: 'terminated',
  TIMED_OUT: 'timed_out',
};

/**
 * True once a run has ended. Anything but an open status counts as ended, so a status this
 * version does not know never leaves a follower polling forever.
 */
export function isFinal(status: string): boolean {
  return !OPEN_STATUSES.includes(status);
}

export function isRunStatus(status: string): status is RunStatus {
  return (RUN_STATUSES as string[]).includes(status);
}

/** The visibility query clause for runs in `status`. */
export function listFilter(status: string): string {
  if (!isRunStatus(status)) throw new UsageError(`unknown status "${status}" (one of: ${RUN_STATUSES.join(', ')})`);
  return LIST_FILTERS[status];
}

/**
 * How a run's Temporal execution ended, or undefined while it is open (running, or paused by
 * Temporal). Closed statuses cadre has no name for (`continued_as_new`, newer ones) pass through
 * in lower case.
 */
export function endedAs(execution: Pick<WorkflowExecutionInfo, 'status' | 'closeTime'> & { typedSearchAttributes?: WorkflowExecutionInfo['typedSearchAttributes'] }): RunStatus | string | undefined {
  const name = execution.status.name;
  // A run a budget stopped fails in Temporal's eyes and says budget_exhausted in its own status.
  if (name === 'FAILED' && execution.typedSearchAttributes?.get(CadreStatus) === 'budget_exhausted') return 'budget_exhausted';
  return ENDED[name] ?? (execution.closeTime ? name.toLowerCase() : undefined);
}
