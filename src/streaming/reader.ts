/**
 * Follows a run's stream from a client (docs/streaming.md): the `stream` query from an offset,
 * polled briskly while events flow and slowly while none do. Queries add nothing to the run's
 * history, however many readers there are. A query names the workflow, not its run, so a session
 * that continued as new is followed on, its offsets counting on. The reader stops after the
 * run's `run_completed`, or when the run has ended and its stream holds nothing more.
 */
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { type StreamPage, streamQuery } from '../protocol/stream';
import { type EventOf, type StreamEventAt, streamEventSchema } from './events';

export interface EventsOptions {
  /** The first offset to read (default 0: the oldest event still held). */
  from?: number;
  /** Stops the reading (the iterator returns). */
  signal?: AbortSignal;
  /** Between polls while events flow (default 50 ms) and after a quiet spell (default 250 ms). */
  pollMs?: number;
  idlePollMs?: number;
  /** Events read before this stops: for sessions, which go on after each reply. */
  until?: (event: StreamEventAt) => boolean;
  /** The workflow is about to start (a first message starts a session): wait for it rather than fail. */
  awaitStart?: boolean;
}

/** Callbacks for those who prefer them to an iterator: each event goes to `onEvent` and to the callback of its type. */
export interface EventCallbacks {
  onEvent?(event: StreamEventAt): void;
  onMessageStart?(event: EventOf<'message_start'> & { offset: number }): void;
  onTextDelta?(event: EventOf<'text_delta'> & { offset: number }): void;
  onToolCall?(event: EventOf<'tool_call'> & { offset: number }): void;
  onToolResult?(event: EventOf<'tool_result'> & { offset: number }): void;
  onMessageComplete?(event: EventOf<'message_complete'> & { offset: number }): void;
  onStep?(event: EventOf<'step_started' | 'step_completed' | 'step_failed'> & { offset: number }): void;
  onApprovalRequested?(event: EventOf<'approval_requested'> & { offset: number }): void;
  onQuestionAsked?(event: EventOf<'question_asked'> & { offset: number }): void;
  onError?(event: EventOf<'error'> & { offset: number }): void;
  onRunCompleted?(event: EventOf<'run_completed'> & { offset: number }): void;
}

const ACTIVE_POLL_MS = 50;
/** A quiet spell after which the reader slows down, and asks whether the run has ended. */
const QUIET_MS = 2000;
/** Failed polls in a row (no worker, a server restart, a workflow not started yet) before the reader gives up: about 10 s. */
const MAX_FAILED_POLLS = 200;

export async function* readEvents(client: Client, workflowId: string, options: EventsOptions = {}): AsyncGenerator<StreamEventAt, void, undefined> {
  const handle = client.workflow.getHandle(workflowId);
  const { signal } = options;
  let from = Math.max(0, Math.floor(options.from ?? 0));
  let lastEventAt = Date.now();
  let lastEndCheck = Date.now();
  let failures = 0;
  while (!signal?.aborted) {
    let page: StreamPage;
    try {
      page = await handle.query(streamQuery, { from });
      failures = 0;
    } catch (err) {
      if ((err instanceof WorkflowNotFoundError && !options.awaitStart) || ++failures >= MAX_FAILED_POLLS || isPermanent(err)) throw err;
      await pause(options.pollMs ?? ACTIVE_POLL_MS, signal);
      continue;
    }
    for (const raw of page.events) {
      const { offset, ...fields } = raw;
      const checked = streamEventSchema.safeParse(fields);
      // An event of a newer cadre than this reader's is passed over, not fatal.
      if (!checked.success) continue;
      const event = { ...checked.data, offset } as StreamEventAt;
      yield event;
      // Nothing after the run's end, nor after the event the caller waited for (the next reply's events are not this one's).
      if (event.type === 'run_completed' || options.until?.(event)) return;
    }
    from = page.next;
    if (page.more) continue;
    const now = Date.now();
    if (page.events.length > 0) lastEventAt = now;
    const quiet = now - lastEventAt > QUIET_MS;
    if (quiet && now - lastEndCheck > QUIET_MS) {
      lastEndCheck = now;
      // A run that ended without a `run_completed` (terminated, or started before streams) ends the reading too.
      if (await hasEnded(client, workflowId)) return;
    }
    // Queries cost the worker a little and the history nothing: brisk while text flows.
    await pause(quiet ? (options.idlePollMs ?? 250) : (options.pollMs ?? ACTIVE_POLL_MS), signal);
  }
}

/** Reads the stream through callbacks until it ends; resolves with the offset to resume from. */
export async function followEvents(client: Client, workflowId: string, callbacks: EventCallbacks, options: EventsOptions = {}): Promise<number> {
  let next = options.from ?? 0;
  for await (const event of readEvents(client, workflowId, options)) {
    next = event.offset + 1;
    dispatch(event, callbacks);
  }
  return next;
}

export function dispatch(event: StreamEventAt, c: EventCallbacks): void {
  c.onEvent?.(event);
  switch (event.type) {
    case 'message_start':
      return c.onMessageStart?.(event);
    case 'text_delta':
      return c.onTextDelta?.(event);
    case 'tool_call':
      return c.onToolCall?.(event);
    case 'tool_result':
      return c.onToolResult?.(event);
    case 'message_complete':
      return c.onMessageComplete?.(event);
    case 'step_started':
    case 'step_completed':
    case 'step_failed':
      return c.onStep?.(event);
    case 'approval_requested':
      return c.onApprovalRequested?.(event);
    case 'question_asked':
      return c.onQuestionAsked?.(event);
    case 'error':
      return c.onError?.(event);
    case 'run_completed':
      return c.onRunCompleted?.(event);
  }
}

async function hasEnded(client: Client, workflowId: string): Promise<boolean> {
  try {
    const { status } = await client.workflow.getHandle(workflowId).describe();
    return status.name !== 'RUNNING';
  } catch {
    return false;
  }
}

/** A run that has no `stream` query (started before streams, or not cadre's) will never have one. */
function isPermanent(err: unknown): boolean {
  const message = err instanceof Error ? err.message : '';
  return /did not register a handler for stream|unknown query/i.test(message);
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
