/** The task queues cadre's workers poll and its clients start runs on: tiny, so clients need not load the worker. */
import os from 'node:os';

export const DEFAULT_TASK_QUEUE = 'cadre';

export function taskQueue(): string {
  return process.env.CADRE_TASK_QUEUE || DEFAULT_TASK_QUEUE;
}

/** What a host name may hold: it is part of a task queue's name and of a search attribute's value. */
const HOST_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** This machine's name among cadre's hosts: CADRE_HOST, else the machine's own name. */
export function hostName(env: NodeJS.ProcessEnv = process.env): string {
  const name = env.CADRE_HOST || os.hostname();
  if (!HOST_NAME.test(name)) {
    throw new Error(`CADRE_HOST must be 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit (got ${JSON.stringify(name)})`);
  }
  return name;
}

/**
 * The queue only one host polls (Temporal's worker-specific task queues): activities that need the
 * files a host holds go there. `cadre@build-1` for the shared queue `cadre`.
 */
export function hostTaskQueue(host: string, shared = taskQueue()): string {
  return `${shared}@${host}`;
}

