/**
 * Which host holds a run's workspace (docs/operations.md, A fleet): the first thing a run asks, of
 * the shared queue, where any host may take it (retried until one that holds it does). A host
 * holds a workspace that is a folder on its disk, inside its workspace root (CADRE_WORKSPACES) when
 * it has one. The run then sends that workspace's activities to the host's own queue.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { temporal } from '@temporalio/proto';
import { ErrorTypes, permanent, transient } from '../errors/application-failures';
import { isInside } from './confinement';
import { CadreHost } from '../protocol/definitions';

/** This worker's host and its own queue (worker/worker.ts), when it has one. */
export interface WorkerHost {
  name: string;
  taskQueue: string;
  /** The folder this host's workspaces live under (CADRE_WORKSPACES); unset, any folder on its disk. */
  workspaces?: string;
}

export interface WorkspaceHost {
  host: string;
  taskQueue: string;
  /** The only host polling the shared queue when the run was bound: its local activities may stay local. */
  solo: boolean;
  /** The namespace has the CadreHost search attribute (an upsert of one it lacks would fail the run's workflow task). */
  indexed: boolean;
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
  const hosts = await hostsPolling();
  if (held) return { host: host.name, taskQueue: host.taskQueue, solo: hosts <= 1, indexed: await hostIndexed() };
  const notHere = `workspace ${workspace} is not on host ${host.name}${host.workspaces ? ` (its workspaces are under ${host.workspaces})` : ''}`;
  if (hosts <= 1) throw permanent(ErrorTypes.WorkspaceMissing, `${notHere}, the only host polling`);
  throw transient(ErrorTypes.WorkspaceNotHere, notHere);
}

/** How many hosts poll the queue this activity came from: a worker's identity is `<pid>@<host>`. */
async function hostsPolling(): Promise<number> {
  const { info, client } = Context.current();
  const { pollers } = await client.workflowService.describeTaskQueue({
    namespace: info.workflowNamespace,
    taskQueue: { name: info.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  return new Set((pollers ?? []).map((p) => p.identity?.slice(p.identity.indexOf('@') + 1))).size;
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
