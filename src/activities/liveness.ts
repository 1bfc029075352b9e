/**
 * When a workflow's running activities last showed life: their last heartbeat (or start, before
 * the first beat), as the server saw it. A team worker's stuck detection asks when it has seen no
 * progress of its own for a while: a long tool that still beats is working, a silent one is not.
 */
import { Context } from '@temporalio/activity';
import type { temporal } from '@temporalio/proto';

type PendingActivity = temporal.api.workflow.v1.IPendingActivityInfo;

/** The watch itself beats too: its beats are not the worker's. */
const WATCH_TYPE = 'watchForSilence';

/** An activity's last sign of life in epoch ms: its last beat, else its start, else (`orScheduled`) its scheduling. */
function signOfLifeMs(activity: PendingActivity, orScheduled: boolean): number | undefined {
  const stamp = activity.lastHeartbeatTime ?? activity.lastStartedTime ?? (orScheduled ? activity.scheduledTime : undefined);
  return stamp ? Number(stamp.seconds ?? 0) * 1000 + Math.floor((stamp.nanos ?? 0) / 1e6) : undefined;
}

export async function lastSignOfLife(workflowId: string): Promise<{ running: number; latestMs?: number; atMs: number }> {
  const description = await Context.current().client.workflow.getHandle(workflowId).describe();
  const pending = (description.raw.pendingActivities ?? []).filter((a) => a.activityType?.name !== WATCH_TYPE);
  let latestMs: number | undefined;
  for (const activity of pending) {
    const ms = signOfLifeMs(activity, false);
    if (ms !== undefined) latestMs = Math.max(latestMs ?? 0, ms);
  }
  return { running: pending.length, ...(latestMs !== undefined && { latestMs }), atMs: Date.now() };
}

export interface SilenceWatch {
  /** How long an activity may go without a sign of life. */
  stuckMs: number;
  /** Workflows (the team run) whose next task should not wait on a lost worker's sticky queue. */
  alsoReset: string[];
  /** When the worker itself last moved on (its workflow's clock): silence counts from the later of that and the activities'. */
  progressMs?: number;
}

export interface Silence {
  /** The quiet activity's last sign of life (epoch ms, the server's clock). */
  sinceMs: number;
  activityType?: string;
  /** How long the worker had been silent when the watch returned (set when it was told `progressMs`). */
  silentMs?: number;
}

/** A watch returns null after this long, and the workflow starts another (a bounded attempt). */
const WATCH_ROUND_MS = 60 * 60 * 1000;

/**
 * A team worker's stuck watch, from outside its workflow: runs (and beats) while the worker runs,
 * and returns when one of the workflow's other activities has shown no life for `stuckMs`.
 *
 * Why outside: when the process that ran the workflow dies, every workflow task of it waits up to
 * 10 s on that worker's sticky queue before another worker takes it; a timer of the workflow's own
 * would report the silence that much late. This activity is retried on a live worker within its
 * heartbeat timeout, and before it returns it tells the server to send the workflow's (and the
 * team run's) next task to any worker.
 */
export async function watchForSilence({ stuckMs, alsoReset, progressMs }: SilenceWatch): Promise<Silence | null> {
  const ctx = Context.current();
  const own = ctx.info.workflowExecution;
  if (!own) throw new Error('watchForSilence runs only as an activity of a workflow');
  const started = Date.now();
  for (;;) {
    if (Date.now() - started > WATCH_ROUND_MS) return null;
    const description = await ctx.client.workflow.getHandle(own.workflowId, own.runId).describe();
    let quiet: Silence | undefined;
    for (const activity of description.raw.pendingActivities ?? []) {
      if (activity.activityType?.name === WATCH_TYPE) continue;
      // One never started (no worker took it) counts from its scheduling.
      const ms = signOfLifeMs(activity, true);
      if (ms === undefined) continue;
      // The most recent sign of life of any of them decides, as in the workflow's own check.
      if (!quiet || ms > quiet.sinceMs) quiet = { sinceMs: ms, ...(activity.activityType?.name && { activityType: activity.activityType.name }) };
    }
    const dueMs = quiet ? Math.max(quiet.sinceMs, progressMs ?? 0) + stuckMs - Date.now() : stuckMs;
    if (quiet && dueMs <= 0) {
      const executions = [[own.workflowId, own.runId], ...alsoReset.map((id) => [id, undefined])] as const;
      await Promise.all(
        executions.map(([workflowId, runId]) =>
          ctx.client.workflowService.resetStickyTaskQueue({ namespace: ctx.info.workflowNamespace, execution: { workflowId, ...(runId && { runId }) } }).catch(() => undefined),
        ),
      );
      return progressMs === undefined ? quiet : { ...quiet, silentMs: Date.now() - Math.max(quiet.sinceMs, progressMs) };
    }
    // Context.sleep ends early when the activity is cancelled (the worker finished).
    await ctx.sleep(Math.min(Math.max(dueMs, 200), stuckMs));
  }
}
