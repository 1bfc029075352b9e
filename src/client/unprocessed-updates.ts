import { ApplicationFailure, WorkflowUpdateFailedError } from '@temporalio/client';

/**
 * The server's failure type for an update that reached a workflow task whose worker completed it
 * without accepting or rejecting the update (a worker replaced mid-flight can do it). The workflow
 * never saw the request, so sending it again cannot apply it twice.
 */
const UNPROCESSED_UPDATE = 'UnprocessedUpdate';

/** Pauses before each new attempt: four attempts in about 4 s, then the failure is the caller's. */
const RETRY_PAUSES_MS = [250, 1000, 3000];

/** Whether the update failed because no worker processed it (and so was not applied). */
export function wasUnprocessed(err: unknown): boolean {
  return err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure && err.cause.type === UNPROCESSED_UPDATE;
}

/** Runs `send` (one update), sending it again when the server says no worker processed it. */
export async function retryUnprocessed<T>(send: () => Promise<T>, pauses: readonly number[] = RETRY_PAUSES_MS): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await send();
    } catch (err) {
      if (!wasUnprocessed(err) || attempt >= pauses.length) throw err;
      await new Promise((resolve) => setTimeout(resolve, pauses[attempt]));
    }
  }
}
