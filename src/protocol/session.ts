/** A `session`'s contract: how it starts, what it carries across continue-as-new, what it answers (workflows/session). */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { WorkflowStreamState } from '@temporalio/workflow-streams/workflow';
import type { Approvals } from '../plan-format/types';
import type { RunLimitValues } from '../plan-format/limits';
import type { ModelMessageInput } from '../providers/model-turn';
import type { HostMove, RunUsage, Waiting } from './definitions';
import type { WorkspaceHost } from '../activities/workspace-host';
import type { TokenUsage } from './usage';
import type { Budget, BudgetLimits, BudgetSummary } from './budget';

/** How a `session` starts (Update-with-Start carries it with the first message). */
export interface SessionInput {
  model?: string;
  system?: string;
  tools: string[];
  approvals: Approvals;
  approvalTimeout?: string;
  /** Where the session's tools run. */
  workspace: string;
  /** Model turns for one reply (default 20). */
  maxTurns?: number;
  /** Messages kept in context (default 50); older ones are summarised. */
  keep?: number;
  /** Messages answered per run before it continues as new (default 100). */
  continueEvery?: number;
  /** Carried across continue-as-new. */
  state?: SessionState;
  /** The session's stream, carried across continue-as-new so offsets keep counting. */
  streamState?: WorkflowStreamState;
  /** A reader long-polled an earlier run: the next run's end gives it time to take the last events. */
  streamFollowed?: boolean;
  /** Its cluster's per-run limits, when lower than Temporal's defaults (`CADRE_RUN_LIMITS`). */
  limits?: Partial<RunLimitValues>;
  /** Caps on what the whole session spends, over all its replies and runs (docs/budgets.md); warnAt 0.8 and onBudget ask unless given. */
  budget?: BudgetLimits & Partial<Pick<Budget, 'warnAt' | 'onBudget'>>;
  /** The host its workspace is bound to (a fleet), and how it moved: carried across continue-as-new. */
  host?: WorkspaceHost;
  hostMoves?: HostMove[];
}

export interface SessionState {
  messages: ModelMessageInput[];
  summary?: string;
  summarised: number;
  dropped: number;
  answered: number;
  /** Where each message a person sent ends, with its reply, in `messages` (until messages are folded): a fork's cut. */
  exchanges?: number[];
  /** Runs of the session so far, this one included. */
  runs: number;
  turns: number;
  toolCalls: number;
  usage: TokenUsage;
  /** Its budget's ledger (the caps as extended, what was spent), carried across continue-as-new. */
  budget?: BudgetSummary;
}

export interface SendResult {
  reply: string;
  /** How many messages the session has answered, this one included. */
  message: number;
  /** Messages in context after this reply. */
  inContext: number;
  /** Which run of the session answered (it continues as new). */
  run: number;
  /** The session's stream offset after this reply: its streamed events all lie before it. */
  offset?: number;
}

export interface SessionDiagnostics {
  answered: number;
  inContext: number;
  summarised: number;
  dropped: number;
  run: number;
  turns: number;
  toolCalls: number;
  usage: TokenUsage;
  queued: number;
  waiting: Waiting[];
  ending: boolean;
  /** This run of the session's use of Temporal's per-run limits (it continues as new well before any). */
  limits?: RunUsage;
  budget?: BudgetSummary;
  /** The host its workspace is bound to, in a fleet whose session has tools (docs/operations.md). */
  host?: string;
  hostMoves?: HostMove[];
}

export const sendUpdate = defineUpdate<SendResult, [{ text: string }]>('send');
export const sessionDiagnosticsQuery = defineQuery<SessionDiagnostics>('sessionDiagnostics');
/** Ends a session once every message already sent has its reply. */
export const endSessionSignal = defineSignal('end');
