/**
 * A team worker's stuck detection: a running worker that has not moved on (no model turn back, no
 * tool call started or ended, no state change) for `stuckAfter`, and whose running activities have
 * not beaten for as long, is reported blocked (state, search attribute, team run, audit log) until
 * it moves on again. The watch is an activity (`watchForSilence`) that a lost worker cannot hold up;
 * runs recorded before it watched with the workflow's own timers, as it still does when no worker
 * takes the activity.
 */
import { CancellationScope, condition, isCancellation, proxyActivities, proxyLocalActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { nowMs } from '../common/clock';
import type { WorkerReporter } from './worker-reporter';
import { PATCH_RECORDED_WATCH, PATCH_STUCK_WATCH } from '../../protocol/patches';
import type { Patches } from '../patch-baselines';

const liveness = proxyLocalActivities<Activities>({ startToCloseTimeout: '10s', retry: { maximumAttempts: 2 } });
/**
 * The watch beats: a lost worker's watch is retried on a live one within 3 s. With no worker for
 * activities within 3 s more, the workflow's own timers watch instead (still before a silence of
 * the default 10 s is due). It returns each hour, to start afresh.
 */
const watcher = proxyActivities<Activities>({
  startToCloseTimeout: '70m',
  scheduleToStartTimeout: '3s',
  heartbeatTimeout: '3s',
  retry: { initialInterval: '100ms', maximumInterval: '5s', maximumAttempts: 20 },
  summary: 'stuck watch',
});

export class StuckWatch {
  /** When the worker last moved on (and how many times), and whether it is blocked for want of progress. */
  private lastProgressMs = nowMs();
  private progress = 0;
  private stuck = false;

  /** @param team the team run whose sticky queue is reset with the worker's when the silence is found. */
  constructor(
    private readonly reporter: WorkerReporter,
    private readonly runningTools: () => string[],
    private readonly patches: Patches,
    private readonly team?: string,
  ) {}

  /** Watches in `scope` (cancelled when the worker ends). */
  start(scope: CancellationScope, stuckMs: number): void {
    const outside = this.patches.has(PATCH_STUCK_WATCH);
    const recorded = outside && this.patches.has(PATCH_RECORDED_WATCH);
    void scope.run(() => (recorded ? this.watchRecorded(stuckMs) : outside ? this.watchFromOutside(stuckMs) : this.watch(stuckMs))).catch(() => undefined);
  }

  /** The worker moved on: a stuck worker runs again. */
  progressed(): void {
    this.lastProgressMs = nowMs();
    this.progress++;
    if (!this.stuck) return;
    this.stuck = false;
    if (this.reporter.state === 'blocked') this.reporter.move('running', 'progress again');
  }

  /**
   * Stuck detection: a running worker that has not moved on (no model turn back, no tool call
   * started or ended, no state change) for `stuckMs` asks the server when its running activities
   * last beat; silent for as long, it is reported blocked (state, search attribute, team run, audit
   * log) until it moves on again. A timer per `stuckMs` of quiet, not per event.
   */
  private async watch(stuckMs: number): Promise<void> {
    // The workflow clock lags after a workflow task moved to another worker (it reads the last
    // started task's time); a timer that fired proves its time has come, so time is at least that.
    let firedAt = 0;
    const now = () => Math.max(nowMs(), firedAt);
    const pause = async (ms: number) => {
      const until = now() + ms;
      await sleep(ms);
      firedAt = Math.max(firedAt, until);
    };
    for (;;) {
      const due = this.lastProgressMs + stuckMs - now();
      if (due > 0 || this.reporter.state !== 'running') {
        await pause(due > 0 ? due : stuckMs);
        continue;
      }
      const { latestMs } = await liveness.lastSignOfLife({ workflowId: workflowInfo().workflowId });
      if (latestMs !== undefined && latestMs + stuckMs > now()) {
        this.lastProgressMs = Math.max(this.lastProgressMs, latestMs);
        continue;
      }
      if (this.reporter.state !== 'running') continue;
      this.reportStuck(now() - Math.max(this.lastProgressMs, latestMs ?? 0));
      firedAt = await this.untilProgress(stuckMs, firedAt);
    }
  }

  /**
   * Stuck detection by an activity that watches the workflow's other activities (see
   * `watchForSilence`): no timer of the workflow's own runs while it watches, so nothing of this
   * workflow waits on a lost worker's sticky queue before the watch has sent it elsewhere.
   */
  private async watchFromOutside(stuckMs: number): Promise<void> {
    const team = this.team;
    for (;;) {
      let silence: Awaited<ReturnType<Activities['watchForSilence']>>;
      try {
        silence = await watcher.watchForSilence({ stuckMs, alsoReset: team ? [team] : [] });
      } catch (err) {
        if (isCancellation(err)) throw err;
        // No worker took the watch (activities run elsewhere, and none is up): the workflow's own timers watch.
        return this.watch(stuckMs);
      }
      if (silence === null) continue; // an hour's round ended
      const progress = this.lastProgressMs;
      // Silent is silent for the worker too: no move, model turn or tool call since either.
      const dueMs = Math.max(this.lastProgressMs, silence.sinceMs) + stuckMs;
      if (this.reporter.state !== 'running') {
        await condition(() => this.lastProgressMs !== progress);
      } else if (dueMs > nowMs()) {
        await condition(() => this.lastProgressMs !== progress, dueMs - nowMs());
      } else {
        this.reportStuck(nowMs() - Math.max(this.lastProgressMs, silence.sinceMs));
        await this.untilProgress(stuckMs, 0);
      }
    }
  }

  /**
   * As watchFromOutside, deciding only by what history holds: the watch is told when the worker last
   * moved on, and returns once both it and the activities have been silent for `stuckMs`; the
   * worker moving on while it watched starts another watch from then.
   */
  private async watchRecorded(stuckMs: number): Promise<void> {
    const alsoReset = this.team ? [this.team] : [];
    for (;;) {
      const seen = this.progress;
      let silence: Awaited<ReturnType<Activities['watchForSilence']>>;
      try {
        silence = await watcher.watchForSilence({ stuckMs, alsoReset, progressMs: this.lastProgressMs });
      } catch (err) {
        if (isCancellation(err)) throw err;
        return this.watch(stuckMs);
      }
      if (silence === null || this.progress !== seen) continue;
      if (this.reporter.state !== 'running') {
        await condition(() => this.progress !== seen);
        continue;
      }
      this.reportStuck(silence.silentMs ?? stuckMs);
      await this.untilProgress(stuckMs, 0, true);
    }
  }

  private reportStuck(silentMs: number): void {
    this.reporter.move('blocked', `no progress, heartbeat or state signal for ${Math.round(silentMs / 1000)} s${this.runningNote()}`);
    this.stuck = true;
  }

  /**
   * Blocked until the loop moves on, or its activities beat again (retried on another worker).
   * Returns the latest time a timer proved (see `watch`).
   */
  private async untilProgress(stuckMs: number, firedAt: number, recorded = false): Promise<number> {
    const now = () => Math.max(nowMs(), firedAt);
    for (let until = now() + stuckMs; !(await condition(() => !this.stuck, stuckMs)); until = now() + stuckMs) {
      firedAt = Math.max(firedAt, until);
      const again = await liveness.lastSignOfLife({ workflowId: workflowInfo().workflowId });
      // Recorded: the time the question was answered, not the workflow's clock (PATCH_RECORDED_WATCH).
      if (again.latestMs !== undefined && again.latestMs + stuckMs > (recorded ? again.atMs : now())) this.progressed();
    }
    return firedAt;
  }

  private runningNote(): string {
    const running = this.runningTools();
    return running.length > 0 ? ` (running: ${running.join(', ')})` : '';
  }
}
