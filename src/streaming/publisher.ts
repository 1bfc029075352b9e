/**
 * Publishes an activity's events to its run's stream (docs/streaming.md) through Temporal's
 * Workflow Streams client: text deltas coalesced, sent at most once per batch interval (the first
 * at once, so the first words show without delay) or sooner when a batch grows large, each batch
 * one signal; other events wait an interval for company, so a quick turn costs one signal.
 * Secrets are redacted before anything leaves; streamed text holds back any ending that could be
 * the beginning of a secret, so a secret split across chunks is never sent in parts. A stream that
 * cannot be published to never fails the activity: it is logged, and the activity's result
 * carries everything the workflow needs.
 */
import type { Client } from '@temporalio/client';
import { WorkflowStreamClient } from '@temporalio/workflow-streams/client';
import { STREAM_TOPIC, type StreamTarget } from '../protocol/stream';
import type { StreamEvent } from './events';

export type PublishedEvent = StreamEvent extends infer E ? (E extends StreamEvent ? Omit<E, 'at' | 'step' | 'turn' | 'attempt'> : never) : never;

export interface PublisherOptions {
  client: Client;
  target: StreamTarget;
  attempt: number;
  /** Redacts a string (text) or JSON value (events); `openTail` tells how much of a text's end could begin a secret. */
  redact?: { text(s: string): string; value<T>(v: T): T; openTail(s: string): number };
  /** Milliseconds between batches (default CADRE_STREAM_BATCH_MS or 100). */
  batchMs?: number;
  log?: (message: string) => void;
}

/** Text a batch may hold before it goes at once. */
const MAX_BATCH_CHARS = 16 * 1024;
/** Events a batch may hold before it goes at once. */
const MAX_BATCH_EVENTS = 64;
/** How long closing may wait for the last batch: a stream never holds a turn up for long. */
const CLOSE_WAIT_MS = 5000;

export function batchInterval(): number {
  const ms = Number(process.env.CADRE_STREAM_BATCH_MS);
  return Number.isFinite(ms) && ms >= 10 ? ms : 100;
}

export class StreamPublisher {
  private readonly client: WorkflowStreamClient;
  private readonly batchMs: number;
  /** The part's text so far, as the model sent it, and what of its redacted form went out. */
  private text = '';
  private sent = '';
  private queued = 0;
  private lastFlush = 0;
  private timer?: NodeJS.Timeout;
  private timerDue = 0;
  private flushing?: Promise<void>;
  private failed = false;

  constructor(private readonly options: PublisherOptions) {
    this.batchMs = options.batchMs ?? batchInterval();
    this.client = WorkflowStreamClient.create(options.client, options.target.workflowId, { batchInterval: this.batchMs, maxRetryDuration: '30 seconds' });
  }

  /** Streamed text of the answer. */
  textDelta(delta: string): void {
    if (!delta) return;
    this.text += delta;
    // Text goes at once when the last batch went an interval ago (the first words show without delay).
    this.schedule(this.text.length - this.sent.length >= MAX_BATCH_CHARS ? Date.now() : this.lastFlush + this.batchMs);
  }

  /** Any other event; text before it goes first, so readers see them in the order they happened. */
  event(event: PublishedEvent): void {
    this.releaseText(true);
    this.put(this.options.redact ? this.options.redact.value(event) : event);
    // Other events wait an interval for what follows them: a quick turn goes in one signal, at its end.
    this.schedule(++this.queued >= MAX_BATCH_EVENTS ? Date.now() : Date.now() + this.batchMs);
  }

  /** Sends what is left and lets go of the stream; never throws, and waits at most a few seconds. */
  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.releaseText(true);
    const closing = (async () => {
      await this.flushing;
      await this.client[Symbol.asyncDispose]();
    })().catch((err: unknown) => this.fail(err));
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([closing, new Promise<void>((resolve) => (timeout = setTimeout(resolve, CLOSE_WAIT_MS)))]);
    clearTimeout(timeout);
  }

  private put(event: object): void {
    const { step, turn } = this.options.target;
    this.client.topic(STREAM_TOPIC).publish({ ...event, step, ...(turn > 0 && { turn }), attempt: this.options.attempt, at: Date.now() });
  }

  /** The redacted text not yet sent, but for an ending that could begin a secret (all of it at the end of a part). */
  private releaseText(all: boolean): void {
    if (this.text.length === 0) return;
    const redact = this.options.redact;
    const redacted = redact ? redact.text(this.text) : this.text;
    const open = all || !redact ? 0 : redact.openTail(this.text);
    // An open ending that redaction touched, or a sent part it changed: wait for more text (or the end).
    if (open > 0 && !redacted.endsWith(this.text.slice(-open))) return;
    const release = redacted.slice(0, redacted.length - open);
    if (release.length > this.sent.length && release.startsWith(this.sent)) {
      this.put({ type: 'text_delta', text: release.slice(this.sent.length) });
      this.sent = release;
      this.queued++;
    }
    if (all) {
      this.text = '';
      this.sent = '';
    }
  }

  /** A flush at `due` (ms since the epoch), unless one is due as soon already. */
  private schedule(due: number): void {
    if (this.failed || (this.timer && this.timerDue <= due)) return;
    clearTimeout(this.timer);
    this.timerDue = due;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, Math.max(0, due - Date.now()));
  }

  private async flush(): Promise<void> {
    if (this.flushing) {
      // One batch at a time; what arrived meanwhile goes with the next.
      await this.flushing;
      return this.schedule(this.lastFlush + this.batchMs);
    }
    const before = this.sent.length;
    this.releaseText(false);
    // Only text paces the batches: a turn's first words go at once, not an interval after its message_start.
    if (this.sent.length !== before) this.lastFlush = Date.now();
    this.queued = 0;
    this.flushing = this.client.flush().catch((err: unknown) => this.fail(err));
    await this.flushing;
    this.flushing = undefined;
  }

  private fail(err: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.options.log?.(`stream of ${this.options.target.workflowId} not published (the turn goes on): ${(err as Error).message}`);
  }
}
