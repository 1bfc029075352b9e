/**
 * The benchmark's yardstick: the least a Temporal workflow can do to run n tool calls
 * one after another. It calls the same `runTool` activity as `runPlan`, with the same
 * timeouts and retry policy `runPlan` gives a step that sets none of its own, so the
 * difference in wall time and history is what cadre's orchestration adds.
 *
 * Workflow code: deterministic, no Node built-ins (activities by `import type` only).
 */
import { proxyActivities } from '@temporalio/workflow';
import type { Activities, ToolRequest } from '../src/activities';
import { durationMs } from '../src/spec/duration';
import { DEFAULT_MAX_ATTEMPTS, DEFAULT_STEP_TIMEOUT, HEARTBEAT_TIMEOUT_MS } from '../src/workflows/plan/step-options';

/** The tool call each step makes; `stepId` is filled in per call. */
export type BaselineCall = Omit<ToolRequest, 'stepId'>;

export async function baselineSteps(n: number, call: BaselineCall): Promise<number> {
  const timeoutMs = durationMs(DEFAULT_STEP_TIMEOUT);
  for (let i = 0; i < n; i++) {
    const stepId = `s${i}`;
    // Same options object `runPlan` builds per step (summary included: it is stored in history).
    const { runTool } = proxyActivities<Activities>({
      scheduleToCloseTimeout: timeoutMs,
      heartbeatTimeout: Math.min(HEARTBEAT_TIMEOUT_MS, timeoutMs),
      summary: stepId,
      retry: { maximumAttempts: DEFAULT_MAX_ATTEMPTS, initialInterval: durationMs('1s'), backoffCoefficient: 2 },
    });
    await runTool({ ...call, stepId });
  }
  return n;
}
