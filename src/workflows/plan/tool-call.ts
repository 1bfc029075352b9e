/**
 * One tool call of a step, as plan runs and item runs (`runItems`) make it: the `runTool`
 * activity (local for cheap tools), or a durable timer for `sleep`. Workflow code.
 */
import { patched, proxyLocalActivities, sleep } from '@temporalio/workflow';
import { PATCH_HOST_STORED_VALUES } from '../../protocol/patches';
import type { Activities, ToolResult } from '../../activities';
import { durationMs } from '../../plan-format/duration';
import { type CompiledStep, startsProcesses } from '../../plan-format/types';
import type { SandboxSpec } from '../../sandbox/profile';
import { PAYLOAD_LIMIT_BYTES } from '../../plan-format/limits';
import { StepTimeout } from '../common/failures';
import { audit } from '../agent/audit';
import { isoAt, nowMs } from '../common/clock';
import { sizeOf } from '../common/sizes';
import { localToolOptions, toolActivityOptions } from './step-options';
import { type HostRoute, hostActivities } from '../common/host-route';

/**
 * Activity ids named after steps (`enrich[2]`, `archive#2` for a second run of a step), so the
 * Web UI and `describe` tell which step an activity belongs to. `named` is false for runs recorded
 * before this naming, which used Temporal's sequence numbers and must replay with them.
 */
export class ActivityIds {
  private readonly runs = new Map<string, number>();

  constructor(private readonly named: () => boolean) {}

  /** How often each label ran, for a run that continues as new (its ids go on counting). */
  carried(): Record<string, number> {
    return Object.fromEntries(this.runs);
  }

  restore(runs: Record<string, number>): void {
    for (const [label, n] of Object.entries(runs)) this.runs.set(label, n);
  }

  next(label: string): { activityId?: string } {
    if (!this.named()) return {};
    const runs = (this.runs.get(label) ?? 0) + 1;
    this.runs.set(label, runs);
    return { activityId: runs === 1 ? label : `${label}#${runs}` };
  }
}

export interface StepToolCall {
  step: CompiledStep;
  tool: string;
  params: unknown;
  timeout: string;
  /** The activity's id and summary: the step id, or `step[index]` for a forEach item. */
  label: string;
  workspace: string;
  local: boolean;
  ids: ActivityIds;
  /** The workspace is a git worktree (its `.git` is out of bounds, git.* tools work). */
  worktree?: boolean;
  /** Output bytes to keep in history (see ToolRequest); absent for runs from before the blob store. */
  inlineLimit?: number;
  /** The plan's sandbox and egress, for the worker to apply. */
  sandbox?: SandboxSpec;
  /** The queue of the host the workspace is bound to (a fleet); unset, the run's own queue. */
  route?: HostRoute;
  /** Only tools that start processes (which alone can run unconfined) get the audit handler: one promise less a call (patch lean-steps). */
  auditsProcessToolsOnly?: boolean;
}

/**
 * Schedules the tool at once (no await before it: commands keep the order runs were recorded in),
 * unless its parameters are too big for one payload: their big parts are stored first.
 */
export function callTool(call: StepToolCall): Promise<ToolResult> {
  if (call.inlineLimit !== undefined && sizeOf(call.params) > MAX_PARAMS_BYTES) {
    return storedValues(call.route)
      .resolveValue({ value: call.params, workspace: call.workspace, inlineLimit: call.inlineLimit })
      .then((params) => schedule({ ...call, params }));
  }
  return schedule(call);
}

function schedule(call: StepToolCall): Promise<ToolResult> {
  const { step, timeout, label, route } = call;
  const request = {
    tool: call.tool,
    params: call.params,
    workspace: call.workspace,
    stepId: step.id,
    ...(call.worktree && { worktree: true }),
    ...(call.inlineLimit !== undefined && { inlineLimit: call.inlineLimit }),
    ...(call.sandbox && { sandbox: call.sandbox }),
  };
  const routed = () => hostActivities({ ...call.ids.next(label), ...toolActivityOptions(step, timeout, label) }, route).runTool(request);
  const local = (onHost?: { onHost: string }) => proxyLocalActivities<Activities>(localToolOptions(step, timeout, label)).runTool({ ...request, ...onHost });
  // A run bound to a lone host runs its cheap tools locally, on that host (host-route.ts).
  const result = !call.local ? routed() : route ? route.viaLocal(local, routed) : local();
  // People chose `sandbox: none`; the audit log keeps that it was used. A handler of its own, so
  // the step's continuation runs exactly when it did before (commands keep their recorded order).
  if (call.auditsProcessToolsOnly && !startsProcesses(call.tool)) return result;
  result.then(
    (done) => done.unconfined && audit.record({ event: 'tool.unconfined', at: isoAt(nowMs()), step: label, tool: call.tool, sandbox: 'none' }),
    () => undefined,
  );
  return result;
}

/** Parameters bigger than this would crowd the activity's payload (and history): their big parts are stored. */
const MAX_PARAMS_BYTES = PAYLOAD_LIMIT_BYTES / 4;

/** `sleep` is a durable timer, not an activity: it survives worker restarts for free. */
export async function durableSleep(summary: string, duration: unknown, timeout: string): Promise<unknown> {
  // A zero timer is "no timer" to the server, which refuses it: sleep the shortest one instead.
  const wanted = Math.max(1, durationMs(String(duration)));
  const limit = durationMs(timeout);
  if (wanted > limit) {
    await sleep(limit, { summary });
    throw new StepTimeout(`sleep of ${String(duration)} ran past the ${timeout} timeout`);
  }
  await sleep(wanted, { summary });
  return { slept: duration };
}

/** The small local activities that read values stored outside history for workflow code. */
const STORED_OPTIONS = { scheduleToCloseTimeout: '1m', heartbeatTimeout: '10s', retry: { maximumAttempts: 3 }, summary: 'read stored values' } as const;

/**
 * The stored-value activities (the workspace's blob store): local ones where the run runs, or, when
 * other hosts poll too, activities on the workspace's host (runs since patch host-stored-values).
 */
export function storedValues(route?: HostRoute): Pick<Activities, 'resolveValue' | 'evaluateCondition'> {
  const local = proxyLocalActivities<Activities>(STORED_OPTIONS);
  if (route === undefined) return local;
  // On a lone host, locally on it (host-route.ts: a host that joined later sends them to the host's queue).
  if (route.solo) {
    const routed = hostActivities(STORED_OPTIONS, route);
    return {
      resolveValue: (request) => route.viaLocal((onHost) => local.resolveValue({ ...request, ...onHost }), () => routed.resolveValue(request)),
      evaluateCondition: (request) => route.viaLocal((onHost) => local.evaluateCondition({ ...request, ...onHost }), () => routed.evaluateCondition(request)),
    };
  }
  return patched(PATCH_HOST_STORED_VALUES) ? hostActivities(STORED_OPTIONS, route) : local;
}
