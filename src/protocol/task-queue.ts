/** The task queues cadre's workers poll and its clients start runs on: tiny, so clients need not load the worker. */
export const DEFAULT_TASK_QUEUE = 'cadre';

export function taskQueue(): string {
  return process.env.CADRE_TASK_QUEUE || DEFAULT_TASK_QUEUE;
}

/**
 * The queue only one host polls (Temporal's worker-specific task queues): activities that need the
 * files a host holds go there. `cadre@build-1` for the shared queue `cadre`.
 */
export function hostTaskQueue(host: string, shared = taskQueue()): string {
  return `${shared}@${host}`;
}

