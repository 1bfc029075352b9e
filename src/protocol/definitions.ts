/** Signals, queries, updates and search attributes shared by the `runPlan` workflow and its clients. */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { WorkerState, WorkerTransition } from './worker-state';
import type { TokenUsage } from './usage';
import type { BudgetLimits, BudgetSpend, RunBudgetSummary } from './budget';

export { CadreForkedFrom, CadreHost, CadrePlan, CadreStatus, CadreWorkerState, SEARCH_ATTRIBUTES } from './search-attributes';
export type { TokenUsage } from './usage';

export const STEP_STATUSES = ['pending', 'running', 'waiting', 'completed', 'failed', 'skipped', 'cancelled'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];
/** `budget_exhausted`: a budget stopped a step the run aborted on (docs/budgets.md); its finished steps keep their outputs. */
export const PLAN_STATUSES = ['running', 'paused', 'waiting', 'completed', 'failed', 'cancelled', 'budget_exhausted'] as const;
export type PlanStatus = (typeof PLAN_STATUSES)[number];
/** How a plan run ends, as it says itself. */
export type PlanEndStatus = Exclude<PlanStatus, 'running' | 'paused' | 'waiting'>;
/**
 * A run's status as clients report it: the workflow's own, or how Temporal ended a run the
 * workflow could not record (terminated by an operator or the server, or past its timeout).
 */
export type RunStatus = PlanStatus | 'terminated' | 'timed_out';

export interface StepRecord {
  id: string;
  status: StepStatus;
  /** Activity attempts summed over every time the step was started. */
  attempts: number;
  startedAt?: string;
  endedAt?: string;
  durationMs?: number;
  error?: string;
  /** Why a step was skipped or cancelled. */
  note?: string;
  /** forEach progress. */
  items?: { total: number; completed: number };
  /** An agent or decide step: its child workflow, and once it ended what it used. */
  agent?: AgentSummary;
  /**
   * A running tool on its second or later attempt: filled in by the client from Temporal's
   * pending activities (the workflow learns of attempts only when they end).
   */
  retrying?: { attempt: number; lastFailure?: string };
  /** A step in a worktree: the worktree as the step left it (a commit of its files, git/snapshot.ts), which a fork restores. */
  worktree?: { snapshot: string; baseCommit: string };
}

/** `host`: the host that holds the run's workspace is unreachable; `cadre move` ends it, not an answer. `budget`: `extend=<n>` or `stop`. */
export type WaitKind = 'ask' | 'failure' | 'timeout' | 'approval' | 'host' | 'budget';

/** Something the run waits on a human for. Answer it with the `answer` update, by `id`. */
export interface Waiting {
  id: string;
  kind: WaitKind;
  prompt: string;
  choices?: string[];
  since: string;
  /** An approval: what exactly would run, whole (the prompt is one line). */
  detail?: ApprovalDetail;
}

/** Everything a person approves: nothing of the call is cut, so the tail of a command cannot hide. */
export interface ApprovalDetail {
  tool: string;
  /** The call's arguments as JSON. */
  args: string;
  /** `shell`: the command, whole. */
  command?: string;
  /** What the command rules made of it: each command it would run, its decision and what decided. */
  segments?: { text: string; decision: string; rule: string }[];
  /** Why it asks: the rule, or the tool's policy. */
  reason: string;
}

export interface AgentSummary {
  workflowId: string;
  turns?: number;
  toolCalls?: number;
  usage?: TokenUsage;
  /** Its budget: the caps (as extended) and what it spent against them (protocol/budget.ts). */
  budget?: { limits: BudgetLimits; spent: BudgetSpend };
  /** Tools running now: filled in by clients from the agent's own query while it runs. */
  running?: string[];
}

/**
 * A run's use of Temporal's per-run limits: signals and updates it took (polls of its stream among
 * the updates), and its history's events and bytes (docs/streaming.md, "What a run can take").
 */
export interface RunUsage {
  signals: number;
  updates: number;
  polls: number;
  events: number;
  bytes: number;
  /** The limits the run keeps within: Temporal's defaults, or its cluster's (`CADRE_RUN_LIMITS`). */
  max?: import('../plan-format/limits').RunLimitValues;
}

export interface CompensationRecord {
  step: string;
  status: 'completed' | 'failed';
  error?: string;
}

export interface Diagnostics {
  plan: string;
  /** The workflow reports a PlanStatus; clients report `terminated` and `timed_out` from Temporal. */
  status: RunStatus;
  paused: boolean;
  startedAt: string;
  endedAt?: string;
  elapsedMs: number;
  steps: StepRecord[];
  waiting: Waiting[];
  errors: { step: string; message: string }[];
  compensations: CompensationRecord[];
  output?: unknown;
  /** Why the run failed, when it did. */
  reason?: string;
  /** The git worktrees the run's steps work in, and what became of them when it ended. */
  worktrees?: WorktreeRecord[];
  /** The host of a fleet that holds the run's workspace, where its tool, git and compensation activities go. */
  host?: string;
  /** The hosts given up on, and when: by `cadre move`, or by the run itself (`lost`) when its workspace is a clone another host can make. */
  hostMoves?: HostMove[];
  /** A workspace cloned from a repository: where, and the last commit of its work pushed to the run's branch. */
  clone?: WorkspaceCloneRecord;
  /** The run's agents as a team: each one's state as it last signalled it. */
  workers?: WorkerRecord[];
  /** Questions workers asked, and who answered them (the last 200). */
  consultations?: ConsultationRecord[];
  /** This run's use of Temporal's per-run limits (a run that continued as new counts from its start). */
  limits?: RunUsage;
  /** A plan's budget: its caps, what ended agents spent, what running ones hold (docs/budgets.md). */
  budget?: RunBudgetSummary;
  /** How many times the run continued as new to stay within those limits (its steps and records go on). */
  continuedAsNew?: number;
  /** A fork (`cadre fork`): the run it was forked from and the step it ran again from; its restored steps say so in their notes. */
  forkedFrom?: { run: string; step: string };
  /**
   * Something the record itself leaves out: set by the workflow when it shortened the record to fit
   * Temporal's limits, by clients for how Temporal ended a run outside cadre or why its steps are missing.
   */
  note?: string;
}

/** `reason` is set when the run moved itself: its host was lost, and its workspace was cloned again on `to`. */
export interface HostMove {
  from: string;
  to: string;
  at: string;
  reason?: 'lost';
}

/** A run's clone (`path`, on the run's host) of `repo`, and its branch, pushed after each step. */
export interface WorkspaceCloneRecord {
  repo: string;
  branch: string;
  path: string;
  /** The last commit pushed (or cloned). */
  commit: string;
  /** The run completed and its clone was removed; or why it could not be. */
  removed?: true;
  kept?: string;
}

export interface WorktreeRecord {
  repo: string;
  task: string;
  path?: string;
  branch?: string;
  /** active while the run holds it; removed, or kept (by its cleanup policy, or because it holds work) once it ended. */
  state: 'creating' | 'active' | 'removed' | 'kept';
  /** Why it was kept, or where removed work's branch stays. */
  note?: string;
  /** Uncommitted files that kept it. */
  files?: string[];
}

/** What `runPlan` returns: the final diagnostics of a completed run. */
export type PlanResult = Diagnostics & { status: 'completed' };

export interface Answer {
  /** The `id` of an entry in `diagnostics.waiting` (the step id). */
  waitId: string;
  /** The answer; for failures `retry|skip|abort`, for timeouts also `extend` or `extend:<duration>`, for approvals `approve` or `deny[:reason]`. */
  value: string;
}

export const diagnosticsQuery = defineQuery<Diagnostics>('diagnostics');
/**
 * Signals for clients that cannot send updates (the Web UI's "Send a Signal", `temporal workflow
 * signal`, other SDKs' fire-and-forget): the same effects as the updates of the same names. A
 * signal that cannot apply is recorded in `diagnostics.errors`, with the reason, and the run goes on.
 */
export const answerSignal = defineSignal<[Answer]>('answer');
export const pauseSignal = defineSignal('pause');
export const resumeSignal = defineSignal('resume');
/** Approves (or with `approve: false`, denies) a tool call that waits for approval. */
export const approveSignal = defineSignal<[{ waitId: string; approve?: boolean; reason?: string }]>('approve');
export const answerUpdate = defineUpdate<{ accepted: true }, [Answer]>('answer');
export const pauseUpdate = defineUpdate<{ paused: boolean }>('pause');
export const resumeUpdate = defineUpdate<{ paused: boolean }>('resume');
/** `cadre move <run> --to <host>`: the run gives up on its host for one that holds its workspace too (docs/operations.md, A fleet). */
export const moveHostUpdate = defineUpdate<{ from: string; to: string }, [{ to: string }]>('moveHost');
/** The same move, told to the run's agents (`cadre move` signals each): `from` and `to` are hosts' own queues. */
export const hostMovedSignal = defineSignal<[{ from: string; to: string }]>('hostMoved');

/** What an agent (`agentTask`) is doing: its `agentDiagnostics` query. */
export interface AgentDiagnostics {
  step: string;
  kind: 'agent' | 'decide';
  status: 'running' | 'waiting' | 'completed' | 'failed';
  turns: number;
  maxTurns: number;
  toolCalls: number;
  usage: TokenUsage;
  /** Tools running now. */
  running: string[];
  /** Tool calls waiting for approval (kind `approval`); answer `approve` or `deny[:reason]`. */
  waiting: Waiting[];
  startedAt: string;
  /** The worker's state, and its last moves (50) with their reasons. */
  state: WorkerState;
  transitions: WorkerTransition[];
  /** Moves made in all. */
  moves: number;
  /** A hash of every move in order: a team board that applied each once, in order, shows the same. */
  fingerprint: string;
  /** The worktrees of its subtasks (spawn_subtask with worktree: true). */
  worktrees?: WorktreeRecord[];
  /** The agent's use of Temporal's per-run limits: its stream's signals and polls among them. */
  limits?: RunUsage;
}

/** A worker's state change, as it tells its team run. */
export interface WorkerStateSignal extends WorkerTransition {
  workflowId: string;
  /** Who the worker is, so a worker the team run did not start itself (a subtask) joins its board. */
  step?: string;
  role?: string;
}

/** A worker as its team run sees it. */
export interface WorkerRecord {
  workflowId: string;
  step: string;
  role?: string;
  worktree?: string;
  state: WorkerState;
  /** The last move applied. */
  seq: number;
  reason?: string;
  /** When the worker moved, and when the team run saw it (workflow times). */
  since?: string;
  seenAt?: string;
  /** Signals that came twice (dropped) or before an earlier one (held until it came). */
  duplicates: number;
  early: number;
  fingerprint: string;
  /** Tools running now: filled in by clients from the worker's own query. */
  running?: string[];
}

export const workerStateSignal = defineSignal<[WorkerStateSignal]>('workerState');

/** A worker's moves since its last report, in order (workers since patch worker-reports send these in batches). */
export interface WorkerMovesSignal {
  workflowId: string;
  step?: string;
  role?: string;
  moves: WorkerTransition[];
}

export const workerMovesSignal = defineSignal<[WorkerMovesSignal]>('workerMoves');

/** A worker's question to its team run (`ask_question`). */
export interface TeamQuestion {
  /** The asking worker's workflow id, and the question's id there. */
  from: string;
  id: string;
  step: string;
  question: string;
  canBeAnsweredBy?: string;
  /** Roles on the way to this question: the asker's, and those who consulted it. */
  chain: string[];
  at: string;
}

/** The team run's reply: an answer, or where the question goes next. */
export interface TeamReply {
  id: string;
  outcome: 'answered' | 'cached' | 'escalate' | 'cut';
  answer?: string;
  /** The role that answered, or `a person`. */
  by?: string;
  confidence?: number;
  note?: string;
}

export interface ConsultationRecord {
  id: string;
  from: string;
  question: string;
  to?: string;
  outcome: 'consulting' | 'answered' | 'cached' | 'escalated' | 'cut';
  confidence?: number;
  note?: string;
  askedAt: string;
  /** The specialist's workflow, and when it started working on the question (its first state signal). */
  specialist?: string;
  specialistStartedAt?: string;
}

export const teamQuestionSignal = defineSignal<[TeamQuestion]>('teamQuestion');
export const teamReplySignal = defineSignal<[TeamReply]>('teamReply');
/** A person answered an escalated question: the team run remembers it for the same question. */
export const teamLearnedSignal = defineSignal<[{ question: string; answer: string }]>('teamLearned');

export const agentDiagnosticsQuery = defineQuery<AgentDiagnostics>('agentDiagnostics');
/** An agent tells the plan run what it waits for, so the run shows it and routes answers to it. */
export const agentWaitsSignal = defineSignal<[{ workflowId: string; waits: Waiting[] }]>('agentWaits');
/** The plan run passes on an answer (already validated there) to the agent that waits for it. */
export const agentAnswerSignal = defineSignal<[Answer]>('agentAnswer');

export const APPROVAL_CHOICES = ['approve', 'deny'];
/** `always`: approve, and run exactly this call again (same tool, same arguments) without asking, for this agent. */
export const APPROVAL_CHOICES_ALWAYS = ['approve', 'always', 'deny'];



export const FAILURE_CHOICES = ['retry', 'skip', 'abort'];
export const TIMEOUT_CHOICES = ['retry', 'extend', 'skip', 'abort'];
