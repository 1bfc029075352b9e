/**
 * What the agent loop (agent-loop.ts) is given: the spec of one agent, the hooks its owner
 * (agentTask, session, a team worker) answers, and the tools the workflow itself answers.
 */
import type { Duration } from '@temporalio/common';
import type { ModelMessageInput } from '../../activities';
import type { Approvals } from '../../plan-format/types';
import type { SandboxSpec } from '../../sandbox/profile';
import type { OwnEvent } from '../common/run-stream';
import type { Budget, BudgetSummary } from '../../protocol/budget';
import type { BudgetOwner } from '../../protocol/budget-lease';
import type { MustChange } from '../../protocol/made-no-change';
import type { Verify } from '../../protocol/verify';
import type { RunLimits } from '../common/run-limits';
import type { HostRoute } from '../common/host-route';

export interface LoopSpec {
  /** The step (`review`, `review[2]`) or `session`: audit events, activity and wait ids name it. */
  label: string;
  model?: string;
  system?: string;
  tools: string[];
  approvals: Approvals;
  /** The approvals of the agents that started this one (a subtask's parent): none may be loosened. */
  inheritedApprovals?: Approvals[];
  approvalTimeout: string;
  /** Model turns for one answer. */
  maxTurns: number;
  /** Input plus output tokens over the loop's whole life. */
  maxTokens?: number;
  /** Caps each turn is held to before it starts (budget-ledger.ts), and a session's ledger carried from its run before. */
  budget?: Budget;
  budgetCarried?: BudgetSummary;
  /** The run whose plan budget its turns and tool calls spend (budget-lease.ts). */
  runBudget?: BudgetOwner;
  /** JSON Schema of a structured final answer. */
  output?: Record<string, unknown>;
  /** The task is a change (of each file listed): no final answer is taken before it. */
  mustChange?: MustChange;
  /** A command that must pass before a final answer is taken (verify-gate.ts). */
  verify?: Verify;
  /** A decision: the final answer must name one of these. */
  choices?: string[];
  workspace: string;
  worktree?: boolean;
  /** Whose blob store holds big tool outputs: the plan's workspace when `workspace` is a worktree. */
  storeWorkspace?: string;
  /** The plan's sandbox and egress, for the worker to apply to every tool call. */
  sandbox?: SandboxSpec;
  /** The host that holds the workspace (a fleet): model turns, the toolset and tools go to its queue. */
  route?: HostRoute;
  /** Attempts of one model turn before its failure goes to `recover` (default 8). */
  modelAttempts?: number;
  /** How long a tool may go without a heartbeat before it is retried elsewhere (default 10s). */
  toolHeartbeatTimeout?: Duration;
  /** The stream the loop's activities publish to (the agent's own workflow, or the session), and the turns counted before this loop. */
  stream?: { workflowId: string; turnBase?: number };
  /** The agent's count of Temporal's per-run limits: it stops before its history outgrows one (agent-loop.ts, historyFull). */
  limits?: RunLimits;
}

/**
 * A tool the workflow itself answers (a team worker's `signal_state`): no activity, its effect is
 * on the workflow's own state. `final` ends the loop with that output.
 */
export interface WorkflowTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  call(args: Record<string, unknown>, callId: string): Promise<{ result: unknown; isError?: boolean; final?: { output: unknown } }>;
}

export interface LoopHooks {
  changed(): void;
  waitsChanged(): void;
  /** Tools the workflow answers, offered beside the spec's. */
  workflowTools?: WorkflowTool[];
  /** A workflow tool's final answer was not taken (its step's verify failed): the agent works on. */
  reopened?(reason: string): void;
  /** The loop moved on: a model turn came back, a tool call started or ended. */
  progressed?(): void;
  /**
   * A failed model turn or tool call, before it counts: `retry` (with another model, when given)
   * runs it again; undefined lets the failure stand.
   */
  recover?(err: unknown, where: 'model' | 'tool', tool?: string): Promise<{ retry: true; model?: string } | undefined>;
  /**
   * A team worker must end with a state signal: a turn with neither tool calls nor one comes here
   * (the count of such turns in a row), and the text returned is sent to the model as the next prompt.
   */
  silent?(count: number): Promise<string>;
  /**
   * The host's stream, for what the workflow sees itself (turns' ends, tool calls and results): with
   * it, the model-turn activity publishes only the text as it comes. Runs recorded earlier have none.
   */
  publish?(event: OwnEvent): void;
  /** Batches of text the next turn may stream (0: none), when the host's budget is running out; undefined: no cap. */
  streamBudget?(): number | undefined;
}

export type ToolMessage = Extract<ModelMessageInput, { role: 'tool' }>;
