/**
 * Which host holds a run's workspace (docs/operations.md, A fleet): the first thing a run asks, of
 * the shared queue, where any host may take it (retried until one that holds it does). A host
 * holds a workspace that is a folder on its disk, inside its workspace root (CADRE_WORKSPACES) when
 * it has one. The run then sends that workspace's activities to the host's own queue.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { ErrorTypes, permanent, transient } from '../errors/application-failures';
import { isInside } from './confinement';
import { CadreHost } from '../protocol/definitions';
import { hostOfIdentity, hostOfQueue, hostState } from '../protocol/host-liveness';

/** This worker's host and its own queue (worker/worker.ts), when it has one. */
export interface WorkerHost {
  name: string;
  taskQueue: string;
  /** The folder this host's workspaces live under (CADRE_WORKSPACES); unset, any folder on its disk. */
  workspaces?: string;
  /** CADRE_HOST_LOST_AFTER: how long its runs wait for a poll before they call it lost. */
  lostAfterMs?: number;
}

export interface WorkspaceHost {
  host: string;
  taskQueue: string;
  /** The only host polling the shared queue when the run was bound: its local activities may stay local. */
  solo: boolean;
  /** The namespace has the CadreHost search attribute (an upsert of one it lacks would fail the run's workflow task). */
  indexed: boolean;
  /** Set by the host (CADRE_HOST_LOST_AFTER); unset, HOST_LOST_AFTER_MS. */
  lostAfterMs?: number;
}

/**
 * The host of `workspace` if it is this worker's; `null` for a worker with no host (its runs go
 * unrouted, as before fleets). A workspace this host does not hold fails `WorkspaceNotHere`, to be
 * retried where another host may take it, or `WorkspaceMissing` when no other host polls.
 */
export async function locateWorkspace(host: WorkerHost | undefined, workspace: string): Promise<WorkspaceHost | null> {
  if (!host) return null;
  const inRoot = host.workspaces === undefined || isInside(path.resolve(workspace), path.resolve(host.workspaces));
  const held = inRoot && (await stat(workspace).catch(() => undefined))?.isDirectory();
  if (held) return hostOf(host);
  const hosts = await hostsPolling();
  const notHere = `workspace ${workspace} is not on host ${host.name}${host.workspaces ? ` (its workspaces are under ${host.workspaces})` : ''}`;
  if (hosts <= 1) throw permanent(ErrorTypes.WorkspaceMissing, `${notHere}, the only host polling`);
  throw transient(ErrorTypes.WorkspaceNotHere, notHere);
}

/**
 * A local activity of a run bound to a lone host runs wherever the run's workflow task ran: on a
 * host that joined later it must not touch a disk that is not the workspace's (`onHost`, the host
 * the run is bound to). The run then sends the call to the host's own queue.
 */
export function checkOnHost(host: WorkerHost | undefined, onHost: string | undefined): void {
  if (onHost === undefined || host?.name === onHost) return;
  throw permanent(ErrorTypes.NotOnHost, `the run is bound to host ${onHost}, and this worker is ${host ? `host ${host.name}` : 'no host'}`);
}

/** This host, as a run bound to it records it: whether it polls alone, and its settings. */
export async function hostOf(host: WorkerHost): Promise<WorkspaceHost> {
  const hosts = await hostsPolling();
  return { host: host.name, taskQueue: host.taskQueue, solo: hosts <= 1, indexed: await hostIndexed(), ...(host.lostAfterMs !== undefined && { lostAfterMs: host.lostAfterMs }) };
}

/** How many hosts poll the queue this activity came from: a worker's identity is `<pid>@<host>`. */
async function hostsPolling(): Promise<number> {
  const pollers = await pollersOf(Context.current().info.taskQueue, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW);
  return new Set(pollers.map((p) => hostOfIdentity(p.identity))).size;
}

/**
 * Whether the host of `taskQueue` (its own queue) has polled in the last `lostAfterMs`: its own
 * queue, or the shared one this question came from (a host whose activity slots are all busy stops
 * polling its own queue, not its workflows).
 */
export async function hostPolling(taskQueue: string, lostAfterMs: number): Promise<boolean> {
  const host = hostOfQueue(taskQueue);
  const shared = Context.current().info.taskQueue;
  const pollers = (
    await Promise.all([
      pollersOf(taskQueue, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY),
      pollersOf(shared, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW).then((all) => all.filter((p) => hostOfIdentity(p.identity) === host)),
    ])
  ).flat();
  const last = Math.max(0, ...pollers.map((p) => optionalTsToMs(p.lastAccessTime) ?? 0));
  return pollers.length > 0 && hostState(pollers.length, last, Date.now(), lostAfterMs) === 'up';
}

const { TaskQueueType, TaskQueueKind } = temporal.api.enums.v1;

async function pollersOf(name: string, taskQueueType: temporal.api.enums.v1.TaskQueueType): Promise<temporal.api.taskqueue.v1.IPollerInfo[]> {
  const { info, client } = Context.current();
  const { pollers } = await client.workflowService.describeTaskQueue({ namespace: info.workflowNamespace, taskQueue: { name, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL }, taskQueueType });
  return pollers ?? [];
}

/** Known once present (it is never removed under a running fleet); asked again while absent, for an operator may add it. */
let indexedOnce = false;

async function hostIndexed(): Promise<boolean> {
  if (indexedOnce) return true;
  const { info, client } = Context.current();
  const { customAttributes, systemAttributes } = await client.connection.operatorService.listSearchAttributes({ namespace: info.workflowNamespace });
  indexedOnce = CadreHost.name in { ...customAttributes, ...systemAttributes };
  return indexedOnce;
}
