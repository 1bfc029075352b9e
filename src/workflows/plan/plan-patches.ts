/**
 * runPlan's patches: each change of behaviour that recorded runs must replay without. Every patch
 * a run takes costs it a marker and an upsert of TemporalChangeVersion (two history events and a
 * visibility write), and a plan run took eight. A run that starts now records one marker,
 * PATCH_PLAN_BASELINE_2, that stands for every patch in BASELINE_2; a run recorded with the first
 * baseline, PATCH_PLAN_BASELINE, replays with the patches of BASELINE, and a run recorded before
 * either asks for each patch as it did. Patches added later are asked for by themselves, until the
 * next baseline takes them in.
 */
import { patched } from '@temporalio/workflow';

/** Runs take signals (answer, pause, resume, approve) as well as updates; older ones dropped them (handlers.ts). */
export const PATCH_SIGNALS = 'plan-signals';
/** An agent's wait asked again (a later `since`) opens again; older runs ignored it (agent-steps.ts). */
export const PATCH_REASKED_WAITS = 'reasked-waits';
/** A finished run is recorded for analytics by a local activity (analytics.ts). */
export const PATCH_RUN_ANALYTICS = 'run-analytics';
/** The run lets its stream's readers go before it ends (run-plan.ts). */
export const PATCH_RUN_STREAM = 'run-stream';
/** Activity ids named after steps instead of Temporal's sequence numbers (tool-call.ts). */
export const PATCH_STEP_ACTIVITY_IDS = 'step-activity-ids';
/**
 * Strict templates (a missing value fails its step), first answer wins, failures of the run instead
 * of workflow-task failures for plan data, local activities for cheap tools (run-state.ts).
 */
export const PATCH_HARDENED = 'engine-hardening';
/**
 * A step's successors start as the step settles, in the same microtask, instead of waking the
 * scheduler's `condition` after every step, and tools that start no process get no audit handler:
 * a chain's step made four promises and one call into the workflow's sandbox more, each of which
 * the SDK makes costly (docs/benchmarks.md, plan overhead) (run-plan.ts).
 */
export const PATCH_LEAN_STEPS = 'lean-steps';
/** forEach chunks' child runs get a 30 s workflow task timeout (foreach-chunks.ts). */
export const PATCH_CHUNK_TASK_TIMEOUT = 'foreach-chunk-task-timeout';

/**
 * Agents stream their turns on their own workflows, and the run's stream says where
 * (`agent_started`): the run's stream holds what controls the run (agent-steps.ts). A run's own
 * stream is part of what it replays (readers' long polls return when it grows), so what it
 * publishes changes only under a patch.
 */
export const PATCH_AGENT_STREAMS = 'agent-streams';
/** A run past its history or signal budget continues as new once no step runs (continue-as-new.ts). */
export const PATCH_CONTINUE_AS_NEW = 'plan-continue-as-new';

/** A run binds its workspace to the host that holds it, and sends its workspace's activities there (workspace-host.ts). */
export const PATCH_WORKSPACE_HOSTS = 'workspace-hosts';
/** A run bound to a host that does not poll alone reads its stored values (and its forEach chunks run) on that host; before, where the run ran. Asked only there. */
export const PATCH_HOST_STORED_VALUES = 'host-stored-values';

/** A forEach chunk that finds its host unreachable tells its run, which shows the wait as the step's (foreach-chunks.ts). Asked only when bound. */
export const PATCH_CHUNK_HOST_WAITS = 'chunk-host-waits';

const PATCH_PLAN_BASELINE = 'plan-baseline';
const PATCH_PLAN_BASELINE_2 = 'plan-baseline-2';

/**
 * The patches every run started since their code has taken. A run that took the baseline has no
 * marker of its own for these: one removed from here would replay as not taken. Never remove one.
 */
const BASELINE: ReadonlySet<string> = new Set([
  PATCH_SIGNALS,
  PATCH_REASKED_WAITS,
  PATCH_RUN_ANALYTICS,
  PATCH_RUN_STREAM,
  PATCH_STEP_ACTIVITY_IDS,
  PATCH_HARDENED,
  PATCH_LEAN_STEPS,
  PATCH_CHUNK_TASK_TIMEOUT,
]);

/** The first baseline's patches and those that came after it. Never remove one. */
const BASELINE_2: ReadonlySet<string> = new Set([...BASELINE, PATCH_AGENT_STREAMS, PATCH_CONTINUE_AS_NEW]);

export class PlanPatches {
  /** Asked once, as the run starts: which baseline this run took, if any (a new run records only the second's marker). */
  private readonly baseline2 = patched(PATCH_PLAN_BASELINE_2);
  private readonly baseline = this.baseline2 || patched(PATCH_PLAN_BASELINE);

  /** `patched(id)`, answered by the baseline when the run took one and the patch is part of it. */
  has(id: string): boolean {
    return (this.baseline2 && BASELINE_2.has(id)) || (this.baseline && BASELINE.has(id)) || patched(id);
  }
}
