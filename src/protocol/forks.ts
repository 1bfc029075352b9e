/** What a fork (docs/forks.md) reads of the run it forks: the `forkSource` query. */
import { defineQuery } from '@temporalio/workflow';
import type { ModelMessageInput } from '../providers/model-turn';
import type { Diagnostics, RunStatus, StepRecord, WorkerRecord } from './definitions';
import type { SessionInput, SessionState } from './session';

/** The note of a fork's restored step begins so (activities/fork.ts): the run it came from paid for it. */
export const RESTORED_NOTE = 'restored from ';

export function isRestored(record: StepRecord): boolean {
  return record.note?.startsWith(RESTORED_NOTE) === true;
}

/** Where a fork came from: the run, and the step from which it ran again. */
export type ForkedFrom = NonNullable<Diagnostics['forkedFrom']>;

/**
 * What a fork reads of the run it forks, by the `forkSource` query: the plan as the run has it,
 * its inputs, and every step's record and output (stored ones by reference).
 */
export interface ForkSource {
  status: RunStatus;
  /** The compiled plan (plan-format's CompiledPlan: the protocol imports no plan format). */
  plan: { name: string; workspace: string; source?: unknown; steps: { id: string; needs: string[] }[] } & Record<string, unknown>;
  inputs: Record<string, unknown>;
  records: StepRecord[];
  outputs: Record<string, unknown>;
  /** A team: its workers as the board last had them, and the answers it remembers (question → answer). */
  workers?: WorkerRecord[];
  teamAnswers?: [string, { answer: string; by: string }][];
}

export const forkSourceQuery = defineQuery<ForkSource>('forkSource');

/** What a session's fork reads of it (`cadre fork <session> --at <n>`): how it was started, and its conversation. */
export interface SessionForkSource {
  input: Omit<SessionInput, 'state' | 'streamState' | 'streamFollowed'>;
  state: SessionState;
}

export const sessionForkSourceQuery = defineQuery<SessionForkSource>('sessionForkSource');

/** What an agent's fork at a turn reads of it (`cadre fork --from <step> --turn <n>`): its conversation, and where each turn began in it. */
export interface AgentForkSource {
  messages: ModelMessageInput[];
  /** How many messages there were as each model turn began. */
  turnStarts: number[];
}

export const agentForkSourceQuery = defineQuery<AgentForkSource>('agentForkSource');

/**
 * An agent forked at a turn: the first `turns` turns' messages (the model's replies and the tool
 * results, from the old run's history), and the agent workflow they come from. The model goes on
 * from there; those turns are neither asked of the model nor run again.
 */
export interface AgentResume extends AgentForkSource {
  turns: number;
  from: string;
}
