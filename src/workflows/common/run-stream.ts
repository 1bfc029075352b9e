/**
 * A stream (protocol/stream.ts): a Workflow Stream hosted in this workflow (a plan run, an agent, a
 * session). The workflow publishes its own events into it, which costs no history; activities
 * publish what only they see (a model's text as it comes) by the stream's signal. Publishing issues
 * no command, but a reader's long poll (the stream's update) returns when the log grows: what a
 * workflow publishes is part of what it replays, and changes only under a patch. Long polls are
 * held to a share of the run's updates, so they never crowd out the answers people send
 * (docs/streaming.md, "What a run can take").
 */
import { ApplicationFailure, CancellationScope, allHandlersFinished, condition, defaultPayloadConverter, setHandler } from '@temporalio/workflow';
import type { Payload } from '@temporalio/common';
import {
  type PollInput,
  type PollResult,
  type PublishInput,
  WorkflowStream,
  type WorkflowStreamState,
  decodePayloadWire,
  workflowStreamPollUpdate,
  workflowStreamPublishSignal,
} from '@temporalio/workflow-streams/workflow';
import { STREAM_PAGE_EVENTS, STREAM_TOPIC, type StreamPage, type StreamRead, streamQuery } from '../../protocol/stream';
import { UPDATES_IN_FLIGHT, UPDATES_PER_RUN } from '../../plan-format/limits';
import type { Waiting } from '../../protocol/definitions';
import type { OwnEvent } from '../../streaming/events';
import { nowMs } from './clock';
import type { RunLimits } from './run-limits';

export type { WorkflowStreamState } from '@temporalio/workflow-streams/workflow';
export type { OwnEvent } from '../../streaming/events';

/** Items held in memory: past HIGH, the oldest are dropped down to KEEP (readers that far behind start at the oldest kept). */
const HIGH = 3000;
const KEEP = 2000;
/** Items carried across continue-as-new: enough for a reader a few replies behind, small beside the 2 MB input limit. */
const CARRIED = 200;

/** What this class reads of the library's stream: its log, for the `stream` query (test/unit/run-stream.test.ts guards the shape). */
interface StreamInternals {
  log: { topic: string; payload: Payload }[];
  baseOffset: number;
  draining: boolean;
  onPublish(input: PublishInput): void;
  onPoll(input: PollInput): Promise<PollResult>;
}

/** How long a run that had long-polling readers waits, at its end, for them to take its last events. */
const LAST_POLL_GRACE = '2s';
/** Long polls held at once: half of Temporal's 10 updates in flight a run, the rest kept for answers. */
export const MAX_POLLS_IN_FLIGHT = 5;
/** Polls a run takes in all: a quarter of Temporal's 2,000 updates a run, the rest kept for answers. */
export const MAX_POLLS_PER_RUN = 500;

export class RunStream {
  private readonly stream: WorkflowStream;
  private readonly internals: StreamInternals;
  private readonly announced = new Set<string>();
  /** Whether a reader long-polled this run, and the furthest offset a poll has handed out. */
  private polled = false;
  private servedTo = 0;
  /** Long polls taken by this run, and those held now. */
  private polls = 0;
  private polling = 0;

  /**
   * @param limits counts the stream's signals and polls as the run's.
   * @param followed a reader long-polled the run this one continues (`followed` there): it may not
   * have reached this run yet when it ends, and gets the grace a polled run gives.
   */
  constructor(
    state?: WorkflowStreamState,
    private readonly limits?: RunLimits,
    followed = false,
  ) {
    this.polled = followed;
    this.stream = new WorkflowStream(state);
    this.internals = this.stream as unknown as StreamInternals;
    this.guardHandlers();
    setHandler(streamQuery, (read) => this.read(read));
    // Outside the run's cancellation: a cancelled run's pending wait must not reject unhandled.
    void CancellationScope.nonCancellable(() => this.trimmer());
  }

  /** The offset the next event will have. */
  get offset(): number {
    return this.internals.baseOffset + this.internals.log.length;
  }

  publish(event: OwnEvent): void {
    this.stream.topic(STREAM_TOPIC).publish({ ...event, at: nowMs() });
  }

  /** An agent this workflow started: readers follow its own stream from here. */
  announceAgent(step: string, workflowId: string, kind: 'agent' | 'decide'): void {
    this.publish({ type: 'agent_started', step, workflowId, kind });
  }

  /** Publishes the waits not announced before: approvals as `approval_requested`, a lost host as `host_unreachable`, the rest as `question_asked`. */
  announceWaits(waits: Waiting[], workflowId?: string): void {
    for (const w of waits) {
      if (this.announced.has(w.id)) continue;
      this.announced.add(w.id);
      const step = w.id.split('/')[0];
      this.publish({ type: w.kind === 'approval' ? 'approval_requested' : w.kind === 'host' ? 'host_unreachable' : 'question_asked', step, waitId: w.id, prompt: w.prompt, ...(w.choices && { choices: w.choices }), ...(workflowId && { workflowId }) });
    }
    if (this.announced.size > HIGH) this.announced.clear();
  }

  /**
   * Ends the readers' long polls (the run is ending) and waits until they have returned. A run that
   * was long-polled first gives its readers a moment to take the last events: a reader between two
   * polls would otherwise find the run gone (Temporal's clients in other languages then read the
   * rest with a poll query, which TypeScript workflows cannot register).
   */
  async drain(): Promise<void> {
    if (this.polled) await condition(() => this.servedTo >= this.offset, LAST_POLL_GRACE);
    this.stream.detachPollers();
    await condition(allHandlersFinished);
  }

  /** Readers' long polls return, and new ones are turned away until the next run (continue-as-new is coming). */
  detach(): void {
    this.stream.detachPollers();
  }

  /** Takes long polls again: the continue-as-new that `detach` prepared did not happen. */
  resume(): void {
    this.internals.draining = false;
  }

  /** Whether a reader long-polled this run (or the run it continues): carried across continue-as-new. */
  get followed(): boolean {
    return this.polled;
  }

  /** The state to continue as new with: offsets keep counting, the newest events come along. */
  carried(): WorkflowStreamState {
    const state = this.stream.getState();
    const dropped = Math.max(0, state.log.length - CARRIED);
    return { ...state, log: state.log.slice(dropped), base_offset: state.base_offset + dropped };
  }

  /**
   * The library's publish signal and poll update, with their input checked first: anyone can send
   * them (the temporal CLI, another SDK), and a malformed one must be dropped or rejected, never
   * fail the workflow task.
   */
  private guardHandlers(): void {
    setHandler(workflowStreamPublishSignal, (input: PublishInput) => {
      this.limits?.signal();
      if (!isPublish(input)) return;
      try {
        input.items.forEach((item) => decodePayloadWire(item.data));
      } catch {
        return; // items that are not payloads: the whole batch is dropped, as a publisher retries whole batches
      }
      this.internals.onPublish(input);
    });
    setHandler(
      workflowStreamPollUpdate,
      async (input: PollInput) => {
        this.polled = true;
        this.polls++;
        this.polling++;
        this.limits?.update(true);
        try {
          const result = await this.internals.onPoll(input);
          this.servedTo = Math.max(this.servedTo, result.next_offset);
          return result;
        } finally {
          this.polling--;
        }
      },
      {
        validator: (input: PollInput) => {
          if (this.internals.draining) throw ApplicationFailure.create({ message: 'Workflow is draining for continue-as-new', type: 'StreamDraining', nonRetryable: true });
          if (!isPoll(input)) throw ApplicationFailure.create({ message: 'a poll is { topics: string[], from_offset: a whole number >= 0 }', type: 'BadPoll', nonRetryable: true });
          // Refused, not accepted: a refusal costs the run neither history nor one of its updates.
          if (this.polling >= MAX_POLLS_IN_FLIGHT) throw pollLimit(`${MAX_POLLS_IN_FLIGHT} long polls of this stream are open, half of the ${UPDATES_IN_FLIGHT} updates Temporal lets a run hold at once`);
          if (this.polls >= MAX_POLLS_PER_RUN) throw pollLimit(`this run has taken ${MAX_POLLS_PER_RUN} polls of its stream, a quarter of the ${UPDATES_PER_RUN} updates Temporal lets a run take`);
        },
      },
    );
  }

  private read(request: StreamRead): StreamPage {
    const { from, max } = request ?? {};
    const { log, baseOffset } = this.internals;
    const limit = Math.min(Math.max(1, Math.floor(max ?? STREAM_PAGE_EVENTS)), STREAM_PAGE_EVENTS);
    const start = Math.max(0, Math.floor(Number(from) || 0) - baseOffset);
    const events: StreamPage['events'] = [];
    let i = start;
    for (; i < log.length && events.length < limit; i++) {
      if (log[i].topic !== STREAM_TOPIC) continue;
      const data = defaultPayloadConverter.fromPayload<Record<string, unknown>>(log[i].payload);
      if (data !== null && typeof data === 'object') events.push({ ...data, offset: baseOffset + i });
    }
    return { events, next: baseOffset + i, base: baseOffset, more: i < log.length };
  }

  /** Bounds the log in memory; a wait for a condition, so it issues no command. */
  private async trimmer(): Promise<void> {
    for (;;) {
      await condition(() => this.internals.log.length > HIGH);
      this.stream.truncate(this.offset - KEEP);
    }
  }
}

/** A poll refused to keep room for people's answers: it says where to read instead. */
function pollLimit(why: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: 'StreamPollLimit',
    message: `${why}; read the rest of this stream with the \`stream\` query, which costs the run nothing (docs/streaming.md)`,
    nonRetryable: true,
  });
}

function isPublish(input: unknown): input is PublishInput {
  const p = input as PublishInput | null;
  return (
    typeof p === 'object' && p !== null && typeof p.publisher_id === 'string' && Number.isInteger(p.sequence) && Array.isArray(p.items) &&
    p.items.every((item) => typeof item === 'object' && item !== null && typeof item.topic === 'string' && typeof item.data === 'string')
  );
}

function isPoll(input: unknown): input is PollInput {
  const p = input as PollInput | null;
  return typeof p === 'object' && p !== null && Number.isInteger(p.from_offset) && p.from_offset >= 0 && Array.isArray(p.topics) && p.topics.every((t) => typeof t === 'string');
}
