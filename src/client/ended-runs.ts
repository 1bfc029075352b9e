/**
 * Records of runs Temporal closed: the workflow never saw its own end when an operator or the
 * server terminated it, or it ran past its timeout, so its last record still says it runs.
 */
import type { WorkflowExecutionDescription, WorkflowService } from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { formatMs } from '../plan-format/duration';
import { CadrePlan, type Diagnostics, type RunStatus } from '../protocol/definitions';

/** The workflow's last record, with how and when its execution ended. */
export function markEnded(record: Diagnostics, description: WorkflowExecutionDescription, status: RunStatus, note?: string): Diagnostics {
  const closedMs = (description.closeTime ?? new Date()).getTime();
  return {
    ...record,
    status,
    endedAt: record.endedAt ?? new Date(closedMs).toISOString(),
    elapsedMs: record.endedAt ? record.elapsedMs : closedMs - Date.parse(record.startedAt),
    // Nothing can answer a closed run.
    waiting: [],
    ...(note && { note }),
  };
}

/** What Temporal alone tells of an ended run, when no worker can replay its step records. */
export function minimalRecord(description: WorkflowExecutionDescription, status: RunStatus, note: string): Diagnostics {
  const closedMs = (description.closeTime ?? new Date()).getTime();
  return {
    plan: description.typedSearchAttributes.get(CadrePlan) ?? String(description.memo?.plan ?? description.type),
    status,
    paused: false,
    startedAt: description.startTime.toISOString(),
    endedAt: new Date(closedMs).toISOString(),
    elapsedMs: closedMs - description.startTime.getTime(),
    steps: [],
    waiting: [],
    errors: [],
    compensations: [],
    note,
  };
}

/** Who terminated a run and why, or which timeout ended it; undefined for runs cadre ended itself. */
export async function howItEnded(
  service: WorkflowService,
  namespace: string,
  description: WorkflowExecutionDescription,
  status: RunStatus,
): Promise<string | undefined> {
  if (status === 'timed_out') {
    const config = description.raw.executionConfig;
    const limit = optionalTsToMs(config?.workflowExecutionTimeout) ?? optionalTsToMs(config?.workflowRunTimeout);
    return `Temporal timed the run out${limit ? ` (workflow timeout ${formatMs(limit)})` : ''}`;
  }
  if (status !== 'terminated') return undefined;
  const { history } = await service.getWorkflowExecutionHistory({
    namespace,
    execution: { workflowId: description.workflowId, runId: description.runId },
    historyEventFilterType: temporal.api.enums.v1.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
  });
  const terminated = history?.events?.[0]?.workflowExecutionTerminatedEventAttributes;
  return `terminated${terminated?.identity ? ` by ${terminated.identity}` : ''}${terminated?.reason ? `: ${terminated.reason}` : ''}`;
}
