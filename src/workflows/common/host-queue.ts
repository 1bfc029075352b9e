/** Where a fleet's workspace activities go (docs/operations.md, A fleet). Workflow code. */

/** Activity options on the queue of the host that holds the workspace, or as they are when the run is bound to none. */
export function onHost<T extends object>(options: T, taskQueue: string | undefined): T & { taskQueue?: string } {
  return taskQueue === undefined ? options : { ...options, taskQueue };
}
