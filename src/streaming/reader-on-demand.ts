/**
 * The stream's reader for the client, loaded when a command first reads events: its events'
 * schemas bring zod, and most commands (status, list, answer) read none.
 */
import type { Client } from '@temporalio/client';
import type { StreamEventAt } from './events';
import type { EventCallbacks, EventsOptions, StreamCursor } from './reader';

const reader = () => import('./reader');

export async function* readEventsOnDemand(client: Client, workflowId: string, options: EventsOptions): AsyncGenerator<StreamEventAt, void, undefined> {
  yield* (await reader()).readEvents(client, workflowId, options);
}

export async function followEventsOnDemand(client: Client, workflowId: string, callbacks: EventCallbacks, options: EventsOptions): Promise<StreamCursor> {
  return (await reader()).followEvents(client, workflowId, callbacks, options);
}
