/** What a finished run leaves for analytics: its steps' outcomes and its waits for people, never their content. */
import type { TokenUsage } from '../protocol/usage';

export type RunEndStatus = 'completed' | 'failed' | 'cancelled' | 'budget_exhausted';

export interface RunStepOutcome {
  id: string;
  /** The step's index in the plan, so stats list steps in plan order. */
  position: number;
  /** The tool, or ask, agent or decide. */
  tool: string;
  status: string;
  attempts: number;
  durationMs?: number;
  /** An agent or decide step: the model it names (the worker fills in its default), what it used, and (when priced) what that cost. */
  model?: string;
  usage?: TokenUsage;
  costUsd?: number;
}

export interface HumanWaitOutcome {
  step: string;
  kind: string;
  outcome: 'answered' | 'timed_out';
  waitedMs: number;
}

/**
 * One call of the `recordRunAnalytics` activity. A run with many steps sends them in several
 * parts; the run's row goes in with the last (`final`), so stats never read a run half written.
 */
export interface RunAnalyticsPart {
  workflowId: string;
  runId: string;
  plan: string;
  status: RunEndStatus;
  startedAt: string;
  endedAt: string;
  durationMs: number;
  steps: RunStepOutcome[];
  humanWaits: HumanWaitOutcome[];
  /** The place of this part's first wait among all the run's waits. */
  humanWaitsFrom: number;
  final: boolean;
}

export type RecordOutcome = { recorded: true; where: string } | { recorded: false; why: string };

/** A query on the analytics database (PGlite or Postgres). */
export type Query = <Row>(sql: string, params?: unknown[]) => Promise<Row[]>;

export interface AnalyticsDb {
  readonly where: string;
  query: Query;
  /** Runs `fn` in one transaction: all of it is kept, or none. */
  transaction(fn: (query: Query) => Promise<void>): Promise<void>;
  close(): Promise<void>;
}
