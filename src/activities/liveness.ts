/**
 * When a workflow's running activities last showed life: their last heartbeat (or start, before
 * the first beat), as the server saw it. A team worker's stuck detection asks when it has seen no
 * progress of its own for a while: a long tool that still beats is working, a silent one is not.
 */
import { Context } from '@temporalio/activity';

export async function lastSignOfLife(workflowId: string): Promise<{ running: number; latestMs?: number }> {
  const description = await Context.current().client.workflow.getHandle(workflowId).describe();
  const pending = description.raw.pendingActivities ?? [];
  let latestMs: number | undefined;
  for (const activity of pending) {
    const stamp = activity.lastHeartbeatTime ?? activity.lastStartedTime;
    if (!stamp) continue;
    const ms = Number(stamp.seconds ?? 0) * 1000 + Math.floor((stamp.nanos ?? 0) / 1e6);
    latestMs = Math.max(latestMs ?? 0, ms);
  }
  return { running: pending.length, ...(latestMs !== undefined && { latestMs }) };
}
