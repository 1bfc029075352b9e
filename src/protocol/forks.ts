/** What a fork (docs/forks.md) reads of the run it forks: the `forkSource` query. */
import { defineQuery } from '@temporalio/workflow';
import type { Diagnostics, RunStatus, SessionInput, SessionState, StepRecord } from './definitions';

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
}

export const forkSourceQuery = defineQuery<ForkSource>('forkSource');

/** What a session's fork reads of it (`cadre fork <session> --at <n>`): how it was started, and its conversation. */
export interface SessionForkSource {
  input: Omit<SessionInput, 'state' | 'streamState'>;
  state: SessionState;
}

export const sessionForkSourceQuery = defineQuery<SessionForkSource>('sessionForkSource');
