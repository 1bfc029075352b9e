/**
 * The hosts of a fleet, as Temporal sees them: each worker polls the shared task queue under the
 * identity `<pid>@<host>` and its host's own queue (protocol/task-queue.ts). `cadre workers`.
 */
import type { Client } from '@temporalio/client';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { hostTaskQueue } from '../protocol/task-queue';
import { CadreHost } from '../protocol/definitions';
import { type HostState, hostOfIdentity, hostState } from '../protocol/host-liveness';

export interface HostReport {
  host: string;
  /** The queue only this host polls. */
  taskQueue: string;
  /** Worker processes of this host polling the shared queue (workflows or activities), and its own queue. */
  pollers: { shared: number; own: number };
  /** The last poll of its own queue the server saw (ISO). */
  lastPollAt?: string;
  /** Running runs bound to it (the CadreHost search attribute); absent when the namespace cannot say. */
  runs?: number;
  /** `up` while its own queue is polled; `lost` after HOST_LOST_AFTER_MS without; `shared-only` for a worker with no host queue (an older cadre, or one without a host). */
  state: HostState;
}

type Poller = temporal.api.taskqueue.v1.IPollerInfo;
const { TaskQueueType, TaskQueueKind } = temporal.api.enums.v1;

/** Every host seen polling the shared queue or its own, sorted by name. */
export async function listHosts(client: Client, shared: string, now = Date.now()): Promise<HostReport[]> {
  const { connection, options } = client;
  const namespace = options.namespace;
  const pollersOf = async (queue: string, type: temporal.api.enums.v1.TaskQueueType): Promise<Poller[]> =>
    (await connection.workflowService.describeTaskQueue({ namespace, taskQueue: { name: queue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL }, taskQueueType: type })).pollers ?? [];
  const sharedPollers = [...(await pollersOf(shared, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW)), ...(await pollersOf(shared, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY))];
  const processes = new Map<string, Set<string>>();
  for (const poller of sharedPollers) {
    const host = hostOfIdentity(poller.identity);
    if (host === undefined) continue;
    processes.set(host, (processes.get(host) ?? new Set()).add(poller.identity ?? ''));
  }
  const reports = await Promise.all(
    [...processes.keys()].map(async (host): Promise<HostReport> => {
      const queue = hostTaskQueue(host, shared);
      const own = await pollersOf(queue, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY);
      const last = Math.max(0, ...own.map((p) => optionalTsToMs(p.lastAccessTime) ?? 0));
      const state = hostState(own.length, last, now);
      const runs = await runsBound(client, host);
      return {
        host,
        taskQueue: queue,
        pollers: { shared: processes.get(host)?.size ?? 0, own: own.length },
        ...(last > 0 && { lastPollAt: new Date(last).toISOString() }),
        ...(runs !== undefined && { runs }),
        state,
      };
    }),
  );
  return reports.sort((a, b) => a.host.localeCompare(b.host));
}

/** Running runs whose workspace is bound to `host`, or undefined when the namespace lacks CadreHost. */
async function runsBound(client: Client, host: string): Promise<number | undefined> {
  try {
    return (await client.workflow.count(`${CadreHost.name} = ${JSON.stringify(host)} AND ExecutionStatus = "Running"`)).count;
  } catch {
    return undefined;
  }
}
