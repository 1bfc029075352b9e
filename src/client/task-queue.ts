/** The task queue cadre's workers poll and its clients start runs on: tiny, so clients need not load the worker. */
export const DEFAULT_TASK_QUEUE = 'cadre';

export function taskQueue(): string {
  return process.env.CADRE_TASK_QUEUE || DEFAULT_TASK_QUEUE;
}
