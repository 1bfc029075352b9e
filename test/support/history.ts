/** Reading histories in tests and benchmarks: payload sizes, and a run with its child workflows. */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Byte sizes of every payload in a value (anything with `metadata` and `data`, at any depth). */
export function payloadSizes(root: unknown): number[] {
  const sizes: number[] = [];
  const todo: unknown[] = [root];
  while (todo.length > 0) {
    const item = todo.pop();
    if (item === null || typeof item !== 'object' || ArrayBuffer.isView(item)) continue;
    const candidate = item as { metadata?: unknown; data?: unknown };
    if (candidate.metadata && candidate.data instanceof Uint8Array) sizes.push(candidate.data.byteLength);
    else todo.push(...Object.values(item));
  }
  return sizes;
}

/** The events of a run and of every child workflow it started (forEach chunks), by workflow id, the run first. */
export async function runHistories(client: Client, workflowId: string): Promise<Map<string, HistoryEvent[]>> {
  const histories = new Map<string, HistoryEvent[]>();
  const todo = [workflowId];
  while (todo.length > 0) {
    const id = todo.shift() as string;
    const events = (await client.workflow.getHandle(id).fetchHistory()).events ?? [];
    histories.set(id, events);
    for (const event of events) {
      const child = event.childWorkflowExecutionStartedEventAttributes?.workflowExecution?.workflowId;
      if (child) todo.push(child);
    }
  }
  return histories;
}

/** The patches a run's history recorded markers for, in order (the latest run of `workflowId` unless `runId`). */
export async function patchMarkers(client: Client, workflowId: string, runId?: string): Promise<string[]> {
  const { events } = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  return (events ?? []).flatMap((e) => {
    const marker = e.markerRecordedEventAttributes;
    const data = marker?.markerName === 'core_patch' ? marker.details?.['patch-data']?.payloads?.[0]?.data : undefined;
    return data ? [(JSON.parse(Buffer.from(data).toString()) as { id: string }).id] : [];
  });
}

/** The values a run's history upserted `CadreStatus` to, in order. */
export async function statusUpserts(client: Client, workflowId: string): Promise<string[]> {
  const { events } = await client.workflow.getHandle(workflowId).fetchHistory();
  return (events ?? []).flatMap((e) => {
    const data = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.CadreStatus?.data;
    return data ? [JSON.parse(Buffer.from(data).toString()) as string] : [];
  });
}

/**
 * A history's failed workflow tasks, as `<event id>: <cause>: <message>`, but for the server's own
 * UnhandledCommand: no failure of the code, an event came in while the task that would have ended
 * the workflow ran, and the task runs again with it (Temporal's design).
 */
export function failedTasks(events: HistoryEvent[]): string[] {
  return events.flatMap((e) => {
    const failed = e.workflowTaskFailedEventAttributes;
    if (!failed || failed.cause === temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND) return [];
    return [`${e.eventId}: ${failed.cause}: ${failed.failure?.message ?? ''}`];
  });
}
