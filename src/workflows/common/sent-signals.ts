/**
 * Signals a workflow has sent and not yet seen delivered, so it can wait for them before it ends: a
 * delivery recorded while a workflow's last task runs makes the server fail that task
 * (UnhandledCommand) and hand it out again. A delivery that failed (the target gone) counts as
 * done; one Temporal refused because its target has taken as many signals as a run may is told to
 * `onRefused`, so the sender can say so (docs/streaming.md, "What a run can take").
 */
import { ApplicationFailure } from '@temporalio/workflow';

export class SentSignals {
  private readonly pending = new Set<Promise<void>>();

  constructor(private readonly onRefused?: (err: ApplicationFailure) => void) {}

  get size(): number {
    return this.pending.size;
  }

  track(sending: Promise<unknown>): void {
    const done = () => void this.pending.delete(sent);
    const failed = (err: unknown) => {
      done();
      if (refusedForLimit(err)) this.onRefused?.(err);
    };
    const sent: Promise<void> = sending.then(done, failed);
    this.pending.add(sent);
  }

  /** Until every signal sent so far (and any sent meanwhile) has been delivered or failed. */
  async flush(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }
}

/** A signal Temporal refused because its target run has taken as many as a run may (`history.maximumSignalsPerExecution`). */
export function refusedForLimit(err: unknown): err is ApplicationFailure {
  return err instanceof ApplicationFailure && (/SignalCountLimitExceeded|SIGNAL_COUNT_LIMIT/i.test(err.type ?? '') || /per-workflow signal limit/i.test(err.message));
}
