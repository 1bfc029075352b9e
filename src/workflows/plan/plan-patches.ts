/**
 * runPlan's changes of behaviour, each behind its patch for the runs recorded before it. Every
 * patch a run takes costs it a marker and an upsert of TemporalChangeVersion (two history events
 * and a visibility write), and a plan run took eight. A run that starts now records one marker,
 * PATCH_PLAN_BASELINE, that stands for every patch named in BASELINE; a run recorded before it
 * asks for each patch as it did. Patches added later are asked for by themselves.
 */
import { patched } from '@temporalio/workflow';

const PATCH_PLAN_BASELINE = 'plan-baseline';

/** The patches of runPlan that every run started since their code has taken. */
const BASELINE = new Set([
  'plan-signals',
  'reasked-waits',
  'run-analytics',
  'run-stream',
  'step-activity-ids',
  'engine-hardening',
  'lean-steps',
  'foreach-chunk-task-timeout',
]);

export class PlanPatches {
  /** Asked once, as the run starts: whether this run took the baseline. */
  private readonly baseline = patched(PATCH_PLAN_BASELINE);

  /** `patched(id)`, answered by the baseline when the run took it and the patch is part of it. */
  has(id: string): boolean {
    return (this.baseline && BASELINE.has(id)) || patched(id);
  }
}
