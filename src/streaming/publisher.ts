/**
 * Publishes an activity's events to a stream (docs/streaming.md) through Temporal's Workflow
 * Streams client, each batch one signal to the workflow that hosts the stream. Text is coalesced:
 * the first words go at once, then a batch per interval, and once a turn has streamed for fifty
 * intervals the interval widens (a twentieth of the time since), so a turn of any length sends a
 * bounded number of signals: about 145 for 100 seconds, 220 for an hour, at 100 ms batches, while
 * a turn of a few seconds keeps every batch prompt. A batch also goes at once when its text grows
 * past 16 KB. Other events wait an interval for company, so a
 * quick turn costs one signal. A host running out of its budget gives the turn `maxBatches`: past
 * it, the turn's text is not streamed (the answer is whole in the result).
 *
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
  /** Milliseconds between the first batches (default CADRE_STREAM_BATCH_MS or 100). */
  batchMs?: number;
  log?: (message: string) => void;
}

/** Text a batch may hold before it goes at once. */
const MAX_BATCH_CHARS = 16 * 1024;
/** Events a batch may hold before it goes at once. */
const MAX_BATCH_EVENTS = 64;
/** Past the first WIDEN_AFTER intervals of text, the interval between batches is at least this fraction of the time since. */
const WIDENING = 1 / 20;
const WIDEN_AFTER = 50;
/** How long closing may wait for the last batch: a stream never holds a turn up for long. */
const CLOSE_WAIT_MS = 5000;

export function batchInterval(): number {
  const ms = Number(process.env.CADRE_STREAM_BATCH_MS);
  return Number.isFinite(ms) && ms >= 1 ? ms : 100;
}

export class StreamPublisher {
  private readonly client: WorkflowStreamClient;
  private readonly batchMs: number;
  /** The part's text so far, as the model sent it, and what of its redacted form went out. */
  private text = '';
  private sent = '';
  /** Events waiting for the next batch, in order. */
  private readonly queue: object[] = [];
  private lastFlush = 0;
  private firstTextAt?: number;
  private batches = 0;
  private timer?: NodeJS.Timeout;
  private timerDue = 0;
  private flushing?: Promise<void>;
  private failed = false;

  constructor(private readonly options: PublisherOptions) {
    this.batchMs = options.batchMs ?? batchInterval();
    // Items reach the library's buffer only as a batch is sent (send()), so its own flusher, which
    // wakes each interval, finds nothing to send; a short interval lets it end soon after close().
    this.client = WorkflowStreamClient.create(options.client, options.target.workflowId, { batchInterval: this.batchMs, maxRetryDuration: '30 seconds' });
  }

  /** Whether text given now can still be streamed: a turn past its `maxBatches` streams no more (one batch is kept for the end). */
  get takesText(): boolean {
    const max = this.options.target.maxBatches;
    return !this.failed && (max === undefined || this.batches < max - 1);
  }

  /** Streamed text of the answer; false when it is not taken (see `takesText`). */
  textDelta(delta: string): boolean {
    if (!delta) return true;
    if (!this.takesText) return false;
    this.text += delta;
    this.firstTextAt ??= Date.now();
    // Text goes at once when the last batch went an interval ago (the first words show without delay).
    this.schedule(this.text.length - this.sent.length >= MAX_BATCH_CHARS ? Date.now() : this.lastFlush + this.interval());
    return true;
  }

  /** Any other event; text before it goes first, so readers see them in the order they happened. */
  event(event: PublishedEvent): void {
    this.releaseText(true);
    this.put(this.options.redact ? this.options.redact.value(event) : event);
    // Other events wait an interval for what follows them: a quick turn goes in one signal, at its end.
    this.schedule(this.queue.length >= MAX_BATCH_EVENTS ? Date.now() : Date.now() + this.batchMs);
  }

  /** Sends what is left and lets go of the stream; never throws, and waits at most a few seconds. */
  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.releaseText(true);
    const closing = (async () => {
      await this.flushing;
      if (this.queue.length > 0) await this.send();
      await this.client[Symbol.asyncDispose]();
    })().catch((err: unknown) => this.fail(err));
    let timeout: NodeJS.Timeout | undefined;
    await Promise.race([closing, new Promise<void>((resolve) => (timeout = setTimeout(resolve, CLOSE_WAIT_MS)))]);
    clearTimeout(timeout);
  }

  /** Batches widen once a turn has streamed a while (5 s at 100 ms), so a long turn sends about 20 more per tenfold of its length. */
  private interval(): number {
    const streamed = Date.now() - (this.firstTextAt ?? Date.now());
    return Math.max(this.batchMs, (streamed - WIDEN_AFTER * this.batchMs) * WIDENING);
  }

  private put(event: object): void {
    const { step, turn } = this.options.target;
    this.queue.push({ ...event, step, ...(turn > 0 && { turn }), attempt: this.options.attempt, at: Date.now() });
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
      return this.schedule(this.lastFlush + this.interval());
    }
    const before = this.sent.length;
    this.releaseText(false);
    // Only text paces the batches: a turn's first words go at once, not an interval after its message_start.
    if (this.sent.length !== before) this.lastFlush = Date.now();
    if (this.queue.length === 0) return;
    this.flushing = this.send();
    await this.flushing;
    this.flushing = undefined;
  }

  /** The queued events as one batch: one signal. */
  private async send(): Promise<void> {
    const topic = this.client.topic(STREAM_TOPIC);
    for (const event of this.queue.splice(0)) topic.publish(event);
    this.batches++;
    await this.client.flush().catch((err: unknown) => this.fail(err));
  }

  private fail(err: unknown): void {
    if (this.failed) return;
    this.failed = true;
    this.options.log?.(`stream of ${this.options.target.workflowId} not published (the turn goes on): ${(err as Error).message}`);
  }
}
