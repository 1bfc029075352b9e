/**
 * The benchmark's yardstick: the least a Temporal workflow can do to run n tool calls
 * one after another. On cadre's worker it calls the same `runTool` activity as `runPlan`; on a
 * bare worker (bench/bare-worker.ts) a plain activity of the same signature. Either way with the
 * same timeouts and retry policy `runPlan` gives a step that sets none of its own, so the
 * difference in wall time and history is what cadre's orchestration adds.
 *
 * Workflow code: deterministic, no Node built-ins (activities by `import type` only).
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { ToolRequest, ToolResult } from '../src/activities';
import { durationMs } from '../src/plan-format/duration';
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_STEP_TIMEOUT, HEARTBEAT_TIMEOUT_MS } from '../src/workflows/plan/step-options';

/** The tool call each step makes; `stepId` is filled in per call. */
export type BaselineCall = Omit<ToolRequest, 'stepId'>;

export interface BaselineOptions {
  /** The activity's name: `runTool` on cadre's worker, the plain one on the bare worker. */
  activity?: string;
  /** Local activities, with the options `runPlan` gives a local step. */
  local?: boolean;
}

type ToolActivities = Record<string, (request: ToolRequest) => Promise<ToolResult>>;

export async function baselineSteps(n: number, call: BaselineCall, options: BaselineOptions = {}): Promise<number> {
  const timeoutMs = durationMs(DEFAULT_STEP_TIMEOUT);
  const retry = { maximumAttempts: DEFAULT_MAX_ATTEMPTS, initialInterval: durationMs('1s'), backoffCoefficient: 2 };
  const name = options.activity ?? 'runTool';
  for (let i = 0; i < n; i++) {
    const stepId = `s${i}`;
    // Same options object `runPlan` builds per step (summary included: it is stored in history).
    const activities = options.local
      ? proxyLocalActivities<ToolActivities>({ scheduleToCloseTimeout: timeoutMs, retry, summary: stepId })
      : proxyActivities<ToolActivities>({ scheduleToCloseTimeout: timeoutMs, heartbeatTimeout: Math.min(HEARTBEAT_TIMEOUT_MS, timeoutMs), summary: stepId, retry });
    await activities[name]({ ...call, stepId });
  }
  return n;
}
