/**
 * The contract of the `agentTask` child workflow: its input, its result and its type name, so the
 * plan run, the team run and a worker starting a subtask can start one without importing the
 * workflow's code (which imports the team's tools: that would be a circle).
 */
import type { TeamRole } from '../activities/roles';
import type { SandboxSpec } from '../sandbox/profile';
import type { AgentSpec, Approvals, DecideSpec, TeamSpec } from '../plan-format/types';
import type { RunLimitValues } from '../plan-format/limits';
import type { AgentSummary } from './definitions';
import type { AgentResume } from './forks';
import type { BudgetOwner } from './budget-lease';

/** The workflow type: `agentTask` in agent-task.ts (test/replay.test.ts holds them together). */
export const AGENT_TASK_WORKFLOW = 'agentTask';
export type AgentTaskWorkflow = (input: AgentTaskInput) => Promise<AgentResult>;

/** What a team worker (`agentTask`) knows of its team. */
export interface TeamWorker extends TeamSpec {
  /** The team run: state signals and questions go there. */
  runId: string;
  roles: TeamRole[];
  role?: string;
  /** Roles on the way to this worker: its own, after those whose questions led to it. */
  chain: string[];
  /** 0 for a plan's own workers, 1 for their subtasks, and so on. */
  depth: number;
}

export interface AgentTaskInput {
  /** The plan step (`review`, or `review[2]` for a forEach item): audit and wait ids name it. */
  step: string;
  action: { kind: 'agent'; agent: AgentSpec } | { kind: 'decide'; decide: DecideSpec };
  /** The prompt with its templates resolved. */
  prompt: string;
  workspace: string;
  worktree?: boolean;
  /** The plan's workspace, whose blob store holds big outputs, when `workspace` is a worktree. */
  storeWorkspace?: string;
  /** The worktree's branch, when `workspace` is a worktree: a subtask's own worktree starts from it. */
  branch?: string;
  /** A team worker: it has `signal_state`, `ask_question` and `spawn_subtask`, and must say when it is done. */
  team?: TeamWorker;
  /** The plan's sandbox and egress; subtasks and specialists get the same. */
  sandbox?: SandboxSpec;
  /** The queue of the fleet's host that holds its workspace (and blob store): its activities go there. Absent: its own queue. */
  hostQueue?: string;
  /** How long its host may not poll before it is lost (the binding's CADRE_HOST_LOST_AFTER). */
  hostLostAfterMs?: number;
  /** A subtask's parents' tools and approvals: it gets no tool they lack, and no looser policy. */
  inherited?: InheritedPolicy;
  /**
   * Its turns stream on its own workflow, and its starter's stream says where (docs/streaming.md).
   * Absent in runs recorded before agents had streams: their turns stream to the run's root.
   */
  ownStream?: true;
  /** Its cluster's per-run limits, when lower than Temporal's defaults: its run's, passed on. */
  limits?: Partial<RunLimitValues>;
  /** A fork at a turn (docs/forks.md): the conversation it goes on from, instead of the prompt alone. */
  resume?: AgentResume;
  /** Its plan's budget: the run that holds it, which its turns and its subtasks' spend (docs/budgets.md). */
  runBudget?: BudgetOwner;
}

export interface InheritedPolicy {
  tools: string[];
  approvals: Approvals[];
}

export interface AgentResult extends AgentSummary {
  output: unknown;
}
