/**
 * A finished run leaves its step outcomes and waits for people in the worker's analytics database
 * (src/analytics), for `cadre stats` and the ETA of `cadre watch`. A local activity: no task
 * queue round trip, and its input stays out of history. Analytics never fail or hold up a run for
 * long: a failure to record is a warning in the worker's log, and the run ends as it would have.
 */
import { isRestored } from '../../protocol/forks';
import { log, proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { HumanWaitOutcome, RunEndStatus, RunStepOutcome } from '../../analytics/types';
import { isoAt } from '../common/clock';
import type { CompiledStep } from '../../plan-format/types';
import type { StepRecord } from '../../protocol/definitions';
import { toolLabel } from './metrics';
import { PATCH_RUN_ANALYTICS } from '../../protocol/patches';
import type { PlanPatches } from './plan-patches';
/** Steps (and waits) a part: a 5,000-step plan's records stay well under Temporal's payload limit. */
const RECORDS_PER_PART = 1000;

const recorder = proxyLocalActivities<Activities>({
  // The embedded database's inbox takes milliseconds; a Postgres far away or busy may take seconds.
  startToCloseTimeout: '2m',
  retry: { maximumAttempts: 3, initialInterval: '1s' },
  summary: 'record run analytics',
});

export interface FinishedRun {
  plan: string;
  status: RunEndStatus;
  startedMs: number;
  endedMs: number;
  steps: RunStepOutcome[];
  humanWaits: HumanWaitOutcome[];
}

/** Each step's outcome, in plan order, for the run's analytics. */
export function stepOutcomes(steps: CompiledStep[], record: (id: string) => StepRecord): RunStepOutcome[] {
  return steps.map((step, position) => {
    const r = record(step.id);
    // What its agent used, unless a fork restored it: the run it came from paid for it.
    const usage = r.agent?.usage && !isRestored(r) && { usage: r.agent.usage };
    const model = step.action.kind === 'agent' ? step.action.agent.model : step.action.kind === 'decide' ? step.action.decide.model : undefined;
    return { id: step.id, position, tool: toolLabel(step.action), status: r.status, attempts: r.attempts, ...(r.durationMs !== undefined && { durationMs: r.durationMs }), ...(model && { model }), ...usage };
  });
}

/** Records the run; never throws. */
export async function recordFinishedRun(patches: PlanPatches, run: FinishedRun): Promise<void> {
  if (!patches.has(PATCH_RUN_ANALYTICS)) return;
  const { workflowId, runId } = workflowInfo();
  const parts = Math.max(1, Math.ceil(run.steps.length / RECORDS_PER_PART), Math.ceil(run.humanWaits.length / RECORDS_PER_PART));
  try {
    for (let i = 0; i < parts; i++) {
      const from = i * RECORDS_PER_PART;
      await recorder.recordRunAnalytics({
        workflowId,
        runId,
        plan: run.plan,
        status: run.status,
        startedAt: isoAt(run.startedMs),
        endedAt: isoAt(run.endedMs),
        durationMs: run.endedMs - run.startedMs,
        steps: run.steps.slice(from, from + RECORDS_PER_PART),
        humanWaits: run.humanWaits.slice(from, from + RECORDS_PER_PART),
        humanWaitsFrom: from,
        final: i === parts - 1,
      });
    }
  } catch (err) {
    const cause = (err as Error)?.cause instanceof Error ? ((err as Error).cause as Error) : (err as Error);
    // The workflow logger: written once, not again on replay.
    log.warn(`run analytics not recorded: ${cause?.message ?? String(err)}`);
  }
}
