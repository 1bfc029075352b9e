/**
 * A plan run that continues as new (patch plan-continue-as-new). Temporal's limits hold for one run
 * of a workflow (history events and bytes, signals, updates), and a long plan, or a team that
 * signals for hours, would pass them. Once Temporal suggests it (history, updates) or half of any
 * limit is used, and steps are left to run, the run starts no new step; once none runs and no
 * specialist is answering, it continues as new with what the steps after need: every step's record
 * and output (big ones by reference), what compensations would undo, its worktree leases, the
 * team's memory and board, its activity ids' counts, and its stream's newest events and offsets.
 * Readers follow it on: queries and `cadre` name the workflow, not the run.
 */
import { allHandlersFinished, condition, continueAsNew, log, workflowInfo } from '@temporalio/workflow';
import type { WorkflowStreamState } from '@temporalio/workflow-streams/workflow';
import type { HumanWaitOutcome } from '../../analytics/types';
import type { RunPlanInput } from '../../plan-format/types';
import type { ForkStarts } from './fork-start';
import { PAYLOAD_LIMIT_BYTES } from '../../plan-format/limits';
import { hasDeferred, isStored } from '../../plan-format/refs';
import type { HostMove, StepRecord, WorkerRecord, WorkspaceCloneRecord } from '../../protocol/definitions';
import type { ForkedFrom } from '../../protocol/forks';
import type { CarriedTeam } from '../team/team';
import type { CarriedLease } from './worktrees';
import type { WorkspaceHost } from '../../activities';
import { sizeOf } from '../common/sizes';
import type { RunLimits } from '../common/run-limits';
import type { RunStream } from '../common/run-stream';
import type { Team } from '../team/team';
import { SHED_SHARE } from '../agent/stream-budget';
import type { HostRoute } from '../common/host-route';
import { storedValues } from './tool-call';
import type { RunBudgetCarry } from './run-budget';

/** What a run gives the run it continues as. */
export interface PlanCarry {
  /** Runs before the next one: 1 after the first continue-as-new. */
  runs: number;
  startedAtMs: number;
  records: StepRecord[];
  outputs: Record<string, unknown>;
  /** Steps in the order they completed, for compensations. */
  completed: string[];
  errors: { step: string; message: string }[];
  signalErrors: number;
  paused: boolean;
  activityIds: Record<string, number>;
  worktrees: CarriedLease[];
  team?: CarriedTeam;
  workers: WorkerRecord[];
  humanWaits: HumanWaitOutcome[];
  stream: WorkflowStreamState;
  /** A reader long-polled an earlier run: the next run's end gives it time to take the last events. */
  streamFollowed?: true;
  /** The host the workspace is bound to (patch workspace-hosts). */
  host?: WorkspaceHost;
  /** A workspace cloned from a repository: the clone the plan's workspace is, and its last push. */
  clone?: WorkspaceCloneRecord;
  /** The hosts the run was moved from, so far. */
  hostMoves?: HostMove[];
  /** A fork: the run and step it was forked from, and what it has yet to start from (worktrees, an agent at a turn, a forEach's items). */
  forkedFrom?: ForkedFrom;
  forkStarts?: ForkStarts;
  /** A plan's budget: its caps as extended, what was spent, its deadline. */
  budget?: RunBudgetCarry;
}

/** runPlan's input in a run that continued as new. */
export interface ContinuedPlanInput extends RunPlanInput {
  continued: PlanCarry;
}

export function isContinued(input: unknown): input is ContinuedPlanInput {
  return typeof input === 'object' && input !== null && typeof (input as { continued?: unknown }).continued === 'object' && (input as { continued?: unknown }).continued !== null;
}

/** What the next run's input may weigh: Temporal's payload limit, with room for the envelope. */
export const MAX_CARRY_BYTES = PAYLOAD_LIMIT_BYTES - 256 * 1024;

/** Outputs kept in the carry itself when it is too big: the rest go to the blob store (one read each when a template needs them). */
const INLINE_OUTPUTS_BYTES = 256 * 1024;

/**
 * The next run's input, its outputs stored by reference when the whole would be too big
 * (`store` puts a value in the run's blob store and returns what stays inline); undefined when even
 * that does not fit (a plan too big to carry: the run goes on in this one).
 */
export async function nextInput(input: RunPlanInput, carry: PlanCarry, store: (value: Record<string, unknown>, inlineLimit: number) => Promise<unknown>): Promise<ContinuedPlanInput | undefined> {
  let next: ContinuedPlanInput = { plan: input.plan, inputs: input.inputs, continued: carry };
  if (sizeOf(next) <= MAX_CARRY_BYTES) return next;
  // Outputs already by reference stay so; the others are stored, biggest first, until the rest fits.
  const plain = Object.fromEntries(Object.entries(carry.outputs).filter(([, value]) => !hasDeferred(value)));
  const stored = await store(plain, INLINE_OUTPUTS_BYTES);
  // Thousands of small outputs come back stored as one: too many to carry one by one.
  if (typeof stored !== 'object' || stored === null || isStored(stored)) return undefined;
  next = { ...next, continued: { ...carry, outputs: { ...carry.outputs, ...(stored as Record<string, unknown>) } } };
  return sizeOf(next) <= MAX_CARRY_BYTES ? next : undefined;
}

/** A run waiting on a person drains for continue-as-new only this near a limit. */
const NEAR_LIMIT = 0.7;

/**
 * Whether a run's budget is spent: Temporal suggests continuing as new (history, updates), or half
 * of any limit is used (signals too). A run with a step waiting on a person, which may hold the
 * drain for days, goes on starting other steps until it nears a limit.
 */
export function budgetSpent(limits: RunLimits, waitingOnPeople: boolean): boolean {
  if (!workflowInfo().continueAsNewSuggested && limits.over(SHED_SHARE) === undefined) return false;
  return !waitingOnPeople || limits.over(NEAR_LIMIT) !== undefined;
}

/** What continuing as new needs of the run. */
export interface ContinuingRun {
  readonly input: RunPlanInput;
  readonly plan: RunPlanInput['plan'];
  readonly team?: Team;
  readonly stream: RunStream;
  /** The host its workspace is bound to: the carried values are stored there. */
  readonly host: { readonly route?: HostRoute };
}

/**
 * Continues the run as new once handlers under way (an answer passed on to an agent) and
 * specialists answering questions are done. Resolves false only when the run cannot be carried.
 */
export async function continueRunAsNew(run: ContinuingRun, carry: () => PlanCarry, continuing: () => void): Promise<boolean> {
  await condition(() => allHandlersFinished() && (run.team?.consulting ?? 0) === 0);
  const store = (value: Record<string, unknown>, inlineLimit: number) => storedValues(run.host.route).resolveValue({ value, workspace: run.plan.workspace, inlineLimit });
  const next = await nextInput(run.input, carry(), store);
  if (!next) {
    log.warn(`CadreLimits: plan run ${workflowInfo().workflowId} is past its budget but too big to continue as new; it goes on in this run, to Temporal's limits`);
    return false;
  }
  continuing();
  // Readers' long polls return; they find the stream again on the next run, its offsets counting on.
  run.stream.detach();
  await condition(allHandlersFinished);
  return continueAsNew<(input: ContinuedPlanInput) => Promise<unknown>>(next);
}
