/**
 * A fork started by any client (`{ fork: { from, step, set } }`: `cadre fork`, the `temporal` CLI,
 * Python): the worker reads the run it forks and plans the fork in an activity (activities/fork.ts),
 * and the run starts from what it restores. A fork that cannot be ends the run as failed, naming
 * the field, never a loop of workflow-task failures.
 */
import { ApplicationFailure, proxyActivities, upsertMemo, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { ForkInput, ForkRestore, RunPlanInput } from '../../plan-format/types';
import type { AgentResume } from '../../protocol/forks';
import type { AgentSteps } from './agent-steps';
import type { WorktreeLeases } from './worktrees';
import type { ForEachSteps } from './for-each';
import { CadreForkedFrom, CadrePlan, type StepRecord, type WorkerRecord } from '../../protocol/definitions';
import type { Team } from '../team/team';
import type { RunStream } from '../common/run-stream';
import { describeFailure } from '../common/failures';
import { preparing } from './plan-document';
import type { StepBook } from './step-book';

const reader = proxyActivities<Activities>({ startToCloseTimeout: '1m', heartbeatTimeout: '10s', retry: { initialInterval: '1s', maximumAttempts: 5 }, summary: 'read the run to fork' });

export function isForkStart(input: unknown): input is ForkInput {
  return typeof input === 'object' && input !== null && !Array.isArray(input) && 'fork' in input && !('plan' in input);
}

export async function forkStart(input: ForkInput): Promise<RunPlanInput> {
  const from = typeof input.fork?.from === 'string' ? input.fork.from : '?';
  const prepared = preparing(`(fork of ${from.slice(0, 200)})`, `the worker is reading run ${from.slice(0, 200)} to fork it`);
  // A query answers from the run's state: one that failed reading says failed, not still reading.
  const result = await reader.readFork(input).catch((err: unknown) => {
    prepared.failed(`could not read run ${from}: ${describeFailure(err).message}`);
    throw err;
  });
  if (!result.ok) {
    prepared.failed(result.message);
    throw ApplicationFailure.create({ type: 'ForkInvalid', message: result.message, details: [{ issues: result.issues }], nonRetryable: true });
  }
  upsertMemo({ forkedFrom: { run: input.fork.from, step: input.fork.step } });
  upsertSearchAttributes([{ key: CadrePlan, value: result.start.plan.name }, ...(result.indexed ? [{ key: CadreForkedFrom, value: input.fork.from }] : [])]);
  return result.start;
}

/**
 * The fork's restored steps, as the old run left them: ready for what needs them, and said in the
 * stream; a team's finished workers back on its board, and the answers it remembered.
 */
export function restoreFork(run: { stream: RunStream; agents: AgentSteps; team?: Team }, book: StepBook, forked: ForkRestore<StepRecord>): void {
  book.restore(forked.records, forked.outputs);
  for (const [id, reason] of Object.entries(forked.reasons ?? {})) book.record(id).note = reason;
  for (const record of forked.records) run.stream.publish({ type: 'step_completed', step: record.id, status: record.status === 'skipped' ? 'skipped' : 'completed', ...(record.note && { note: record.note }) });
  if (forked.workers) run.agents.restoreWorkers(forked.workers as WorkerRecord[]);
  if (forked.teamAnswers) run.team?.restore({ answers: forked.teamAnswers, consultations: [], escalated: [], consulted: 0 });
}

/** What a fork's run starts from, kept until used, and carried when it continues as new. */
export type ForkStarts = Pick<ForkRestore, 'worktrees' | 'agents' | 'items'>;

interface ForkTargets {
  worktrees: WorktreeLeases;
  agents: AgentSteps;
  loops: ForEachSteps;
}

/**
 * A fork's starts, given to what uses them: the worktrees its restored steps left (its worktrees
 * are its own), an agent forked at a turn, a forEach forked at an item.
 */
export function forkStarts(targets: ForkTargets, starts: ForkStarts | undefined): void {
  targets.worktrees.forked(workflowInfo().workflowId, starts?.worktrees ?? []);
  for (const [step, resume] of Object.entries(starts?.agents ?? {})) targets.agents.resumes.set(step, resume as AgentResume);
  for (const [step, items] of Object.entries(starts?.items ?? {})) targets.loops.restored.set(step, items);
}

/** What is still to be used of them, for the run this one continues as. */
export function carriedForkStarts(targets: ForkTargets): ForkStarts {
  return { worktrees: targets.worktrees.forkStarts(), agents: Object.fromEntries(targets.agents.resumes), items: Object.fromEntries(targets.loops.restored) };
}
