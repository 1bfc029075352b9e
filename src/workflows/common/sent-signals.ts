/**
 * Signals a workflow has sent and not yet seen delivered, so it can wait for them before it ends: a
 * delivery recorded while a workflow's last task runs makes the server fail that task
 * (UnhandledCommand) and hand it out again. A delivery that failed (the target gone) counts as done.
 */
export class SentSignals {
  private readonly pending = new Set<Promise<void>>();

  get size(): number {
    return this.pending.size;
  }

  track(sending: Promise<unknown>): void {
    const done = () => void this.pending.delete(sent);
    const sent: Promise<void> = sending.then(done, done);
    this.pending.add(sent);
  }

  /** Until every signal sent so far (and any sent meanwhile) has been delivered or failed. */
  async flush(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }
}
