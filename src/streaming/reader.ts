/**
 * Follows a run's stream from a client (docs/streaming.md) as one ordered feed: the run's own
 * stream (steps, waits, its end) and, from the `agent_started` that says where, each of its agents'
 * streams (their turns, text and tool calls), its agents' subtasks' likewise. Every event of an
 * agent's stream comes after its `agent_started` and before the end of its step and of the run;
 * an event of an agent's stream carries `stream`, the agent's workflow id. Each stream is read with
 * the `stream` query from an offset, briskly while events flow and slowly while none do: queries
 * add nothing to any history, however many readers there are. A query names the workflow, not its
 * run, so a session or plan run that continued as new is followed on, its offsets counting on.
 */
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import { type StreamPage, streamQuery } from '../protocol/stream';
import { agentDiagnosticsQuery } from '../protocol/definitions';
import { type EventOf, type StreamEventAt, streamEventSchema } from './events';

/**
 * Where a reading stopped, to resume from: the run's own stream's next offset, and the next offset
 * of each agent's stream that was still open then (by workflow id). Agents announced after `from`
 * are found again; those announced before it and not listed had ended.
 */
export interface StreamCursor {
  from: number;
  streams: Record<string, number>;
}

export interface EventsOptions {
  /** The first offset of the run's own stream to read (default 0: the oldest event still held), or a cursor. */
  from?: number | StreamCursor;
  /** Stops the reading (the iterator returns). */
  signal?: AbortSignal;
  /** Between polls of the run's stream while events flow (default 50 ms) and after a quiet spell (default 250 ms). */
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
/**
 * An agent's stream: every 100 ms while it flows (and while the agent is about to start), every
 * 250 ms through a quiet spell of up to 10 s (a model thinking before its first words), every
 * second after that (a long tool call).
 */
const ACTIVE_AGENT_POLL_MS = 100;
const QUIET_AGENT_POLL_MS = 250;
const IDLE_AGENT_POLL_MS = 1000;
const LONG_QUIET_MS = 10_000;
/** A quiet spell after which the reader slows down, and asks whether the run has ended. */
const QUIET_MS = 2000;
/** Failed polls in a row (no worker, a server restart, a workflow not started yet) before the reader gives up: about 10 s. */
const MAX_FAILED_POLLS = 200;

/** One stream being read: the run's own, or an agent's. */
interface Followed {
  workflowId: string;
  /** The agent's step; undefined for the run's own stream. */
  step?: string;
  next: number;
  dueAt: number;
  lastEventAt: number;
  lastEndCheck: number;
  failures: number;
}

/** The feed's reading state, and the one way a page of events is taken in. */
class Feed {
  readonly root: Followed;
  readonly agents = new Map<string, Followed>();

  constructor(
    private readonly client: Client,
    workflowId: string,
    private readonly options: EventsOptions,
  ) {
    const from = options.from;
    const cursor: StreamCursor = typeof from === 'object' && from !== null ? from : { from: Math.max(0, Math.floor(from ?? 0)), streams: {} };
    this.root = followed(workflowId, undefined, Math.max(0, Math.floor(cursor.from)));
    for (const [id, next] of Object.entries(cursor.streams ?? {})) this.agents.set(id, followed(id, undefined, Math.max(0, Math.floor(next))));
  }

  /** Agents a cursor names learn their steps, so the end of a step waits for its agents' last events. */
  async learnSteps(): Promise<void> {
    await Promise.all(
      [...this.agents.values()].map(async (agent) => {
        try {
          agent.step ??= (await this.client.workflow.getHandle(agent.workflowId).query(agentDiagnosticsQuery)).step;
        } catch {
          // Read to its end with the run's: its step is learnt from its events, if any come.
        }
      }),
    );
  }

  /** The next page of a stream; undefined when it cannot be read now (and should be tried later). */
  async page(stream: Followed): Promise<StreamPage | undefined> {
    try {
      const page = await this.client.workflow.getHandle(stream.workflowId).query(streamQuery, { from: stream.next });
      stream.failures = 0;
      return page;
    } catch (err) {
      if (stream === this.root) {
        if ((err instanceof WorkflowNotFoundError && !this.options.awaitStart) || ++stream.failures >= MAX_FAILED_POLLS || isPermanent(err)) throw err;
        return undefined;
      }
      // An agent not started yet, or whose worker is away: later. One that never had a stream (recorded before agents had one) is left.
      if (isPermanent(err) || ++stream.failures >= MAX_FAILED_POLLS) this.agents.delete(stream.workflowId);
      return undefined;
    }
  }

  /** Events of a page, checked; an agent's carry its workflow id, and an agent it announces is followed from then on. */
  events(stream: Followed, page: StreamPage): StreamEventAt[] {
    const out: StreamEventAt[] = [];
    for (const raw of page.events) {
      const { offset, ...fields } = raw;
      const checked = streamEventSchema.safeParse(fields);
      // An event of a newer cadre than this reader's is passed over, not fatal.
      if (!checked.success) continue;
      const event = { ...checked.data, offset, ...(stream !== this.root && { stream: stream.workflowId }) } as StreamEventAt;
      if (event.type === 'agent_started' && !this.agents.has(event.workflowId)) this.agents.set(event.workflowId, followed(event.workflowId, event.step, 0));
      if (stream !== this.root && event.step !== undefined) stream.step ??= event.step;
      out.push(event);
    }
    return out;
  }

  /** The agents whose streams must be read to their end before this event of the run's own stream: those of its step, or all at its end. */
  ownedBy(event: StreamEventAt): Followed[] {
    if (event.type === 'run_completed') return [...this.agents.values()];
    if (event.type !== 'step_completed' && event.type !== 'step_failed') return [];
    const step = event.step;
    return [...this.agents.values()].filter((a) => a.step !== undefined && (a.step === step || a.step.startsWith(`${step}[`) || a.step.startsWith(`${step}/`)));
  }
}

function followed(workflowId: string, step: string | undefined, next: number): Followed {
  const now = Date.now();
  return { workflowId, ...(step !== undefined && { step }), next, dueAt: now, lastEventAt: now, lastEndCheck: now, failures: 0 };
}

export async function* readEvents(client: Client, workflowId: string, options: EventsOptions = {}): AsyncGenerator<StreamEventAt, void, undefined> {
  const { signal } = options;
  const feed = new Feed(client, workflowId, options);
  await feed.learnSteps();
  const done = (event: StreamEventAt) => event.type === 'run_completed' || options.until?.(event) === true;

  /** Every event of an agent's stream still held, its subtasks' first; false when the reading should stop. */
  async function* drain(agent: Followed): AsyncGenerator<StreamEventAt, boolean, undefined> {
    for (let tries = 0; feed.agents.has(agent.workflowId) && !signal?.aborted; tries++) {
      const page = await feed.page(agent);
      if (!page) {
        if (tries > 20) break;
        await pause(ACTIVE_AGENT_POLL_MS, signal);
        continue;
      }
      const events = feed.events(agent, page);
      agent.next = page.next;
      for (const event of events) {
        if (event.type === 'agent_started') {
          const sub = feed.agents.get(event.workflowId);
          if (sub && !(yield* drain(sub))) return false;
        }
        yield event;
        if (done(event)) return false;
        if (event.type === 'agent_ended') feed.agents.delete(agent.workflowId);
      }
      if (!page.more && events.length === 0) {
        // Nothing more and no end said (a terminated agent): read once its workflow has ended.
        if (await hasEnded(client, agent.workflowId)) feed.agents.delete(agent.workflowId);
        else await pause(ACTIVE_AGENT_POLL_MS, signal);
      }
    }
    return true;
  }

  while (!signal?.aborted) {
    const now = Date.now();
    // The run's own stream.
    if (feed.root.dueAt <= now) {
      const root = feed.root;
      const page = await feed.page(root);
      if (!page) {
        root.dueAt = Date.now() + (options.pollMs ?? ACTIVE_POLL_MS);
      } else {
        let stopped = false;
        for (const event of feed.events(root, page)) {
          for (const agent of feed.ownedBy(event)) {
            if (!(yield* drain(agent))) return;
          }
          root.next = event.offset + 1;
          yield event;
          // Nothing after the run's end, nor after the event the caller waited for (the next reply's events are not this one's).
          if (done(event)) return;
          if (signal?.aborted) stopped = true;
        }
        if (stopped) return;
        root.next = page.next;
        const at = Date.now();
        if (page.events.length > 0) root.lastEventAt = at;
        const quiet = at - root.lastEventAt > QUIET_MS;
        if (!page.more && quiet && at - root.lastEndCheck > QUIET_MS) {
          root.lastEndCheck = at;
          // A run that ended without a `run_completed` (terminated, or started before streams) ends the reading too.
          if (await hasEnded(client, workflowId)) {
            for (const agent of [...feed.agents.values()]) if (!(yield* drain(agent))) return;
            return;
          }
        }
        // Queries cost the worker a little and the history nothing: brisk while text flows.
        root.dueAt = page.more ? at : at + (quiet ? (options.idlePollMs ?? 250) : (options.pollMs ?? ACTIVE_POLL_MS));
      }
    }
    // Its agents' streams, each at its own pace.
    for (const agent of [...feed.agents.values()]) {
      if (agent.dueAt > Date.now() || !feed.agents.has(agent.workflowId)) continue;
      const page = await feed.page(agent);
      if (!page) {
        // Not started yet (announced just before its start), or its worker is away: soon again.
        agent.dueAt = Date.now() + ACTIVE_AGENT_POLL_MS;
        continue;
      }
      const events = feed.events(agent, page);
      agent.next = page.next;
      for (const event of events) {
        yield event;
        if (done(event)) return;
        if (event.type === 'agent_ended') feed.agents.delete(agent.workflowId);
      }
      const at = Date.now();
      if (events.length > 0) agent.lastEventAt = at;
      const quietMs = at - agent.lastEventAt;
      if (quietMs > QUIET_MS && at - agent.lastEndCheck > QUIET_MS) {
        agent.lastEndCheck = at;
        // An agent that ended without saying so (terminated): its stream is read whole.
        if (await hasEnded(client, agent.workflowId)) feed.agents.delete(agent.workflowId);
      }
      const wait = quietMs <= QUIET_MS ? ACTIVE_AGENT_POLL_MS : quietMs <= LONG_QUIET_MS ? QUIET_AGENT_POLL_MS : IDLE_AGENT_POLL_MS;
      agent.dueAt = page.more ? at : at + wait;
    }
    const next = Math.min(feed.root.dueAt, ...[...feed.agents.values()].map((a) => a.dueAt));
    await pause(Math.max(0, next - Date.now()), signal);
  }
}

/** Reads the stream through callbacks until it ends; resolves with the cursor to resume from. */
export async function followEvents(client: Client, workflowId: string, callbacks: EventCallbacks, options: EventsOptions = {}): Promise<StreamCursor> {
  const cursor = startCursor(options.from);
  for await (const event of readEvents(client, workflowId, options)) {
    advance(cursor, event);
    dispatch(event, callbacks);
  }
  return cursor;
}

/** The cursor a reading starts from. */
export function startCursor(from: EventsOptions['from']): StreamCursor {
  return typeof from === 'object' && from !== null ? { from: from.from, streams: { ...from.streams } } : { from: from ?? 0, streams: {} };
}

/** Moves a cursor past an event: the resume point after it. */
export function advance(cursor: StreamCursor, event: StreamEventAt): void {
  if (event.stream === undefined) {
    cursor.from = event.offset + 1;
    if (event.type === 'agent_started') cursor.streams[event.workflowId] ??= 0;
    return;
  }
  if (event.type === 'agent_ended') delete cursor.streams[event.stream];
  else cursor.streams[event.stream] = event.offset + 1;
  if (event.type === 'agent_started') cursor.streams[event.workflowId] ??= 0;
}

/** A cursor as the CLI takes it: the run's offset, then `<agent workflow id>=<offset>` for each open agent stream. */
export function formatCursor(cursor: StreamCursor): string[] {
  return [String(cursor.from), ...Object.entries(cursor.streams).map(([id, next]) => `${id}=${next}`)];
}

/** The CLI's `--from` values back into a cursor; undefined for a value that is not one. */
export function parseCursor(values: string[]): StreamCursor | undefined {
  const cursor: StreamCursor = { from: 0, streams: {} };
  for (const value of values) {
    const at = value.lastIndexOf('=');
    const offset = Number(at < 0 ? value : value.slice(at + 1));
    if (!Number.isInteger(offset) || offset < 0 || (at >= 0 && at === 0)) return undefined;
    if (at < 0) cursor.from = offset;
    else cursor.streams[value.slice(0, at)] = offset;
  }
  return cursor;
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

/** A workflow that has no `stream` query (started before streams, or not cadre's) will never have one. */
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
