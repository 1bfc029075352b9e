/**
 * A step kind: how a plan run runs one step's action. The scheduler (run-plan.ts) knows only
 * steps (readiness, `when`, forEach, timeouts, failure strategies); each kind is a module of this
 * shape in this folder, registered in index.ts. Deterministic: a kind's I/O goes through
 * activities and child workflows.
 */
import type { ToolResult } from '../../../activities';
import type { SandboxSpec } from '../../../sandbox/profile';
import type { ResolveOptions } from '../../../plan-format/templates';
import type { CompiledPlan, CompiledStep } from '../../../plan-format/types';
import type { StepRecord, WaitKind } from '../../../protocol/definitions';
import type { Team } from '../../team/team';
import type { AgentSteps } from '../agent-steps';
import type { ActivityIds } from '../tool-call';
import type { WorktreeLeases } from '../worktrees';
import type { WorkspaceHostBinding } from '../workspace-host';
import type { RunBudget } from '../run-budget';

/** What a kind may use of the run it is part of. */
export interface PlanRunContext {
  readonly plan: CompiledPlan;
  /** Runs recorded before the engine's hardening replay without it (patch engine-hardening). */
  readonly hardened: boolean;
  /** Runs recorded before lean steps replay without them (patch lean-steps). */
  readonly lean: boolean;
  readonly templates: ResolveOptions;
  readonly activityIds: ActivityIds;
  readonly worktrees: WorktreeLeases;
  /** The host the workspace is bound to, in a fleet: where its activities go (patch workspace-hosts). */
  readonly host: WorkspaceHostBinding;
  readonly agents: AgentSteps;
  readonly team?: Team;
  /** The plan's budget, when it has one (run-budget.ts). */
  readonly budget?: RunBudget;
  /** The step's record, as diagnostics show it; call changed() after changing it. */
  record(id: string): StepRecord;
  changed(): void;
  /** What tool calls carry: the inline limit of outputs, and the plan's sandbox. */
  inline(): { inlineLimit?: number };
  sandbox(): { sandbox?: SandboxSpec };
  /** A templated text (question, prompt), read through an activity only when it quotes a stored output. */
  asText(resolved: unknown, limit: number, what: string, render: (value: unknown) => string): string | Promise<string>;
  resolveValue(value: unknown, inlineLimit: number): Promise<unknown>;
  /** Waits for a person's answer (undefined when the timeout passes first). */
  waitForHuman(id: string, kind: WaitKind, prompt: string, choices?: string[], timeout?: string): Promise<string | undefined>;
}

export interface StepKind {
  /** The name plans use (`tool`, `sleep`, `ask`, `agent`, `decide`, `echo`). */
  readonly kind: string;
  /** Without a timeout of its own a step of this kind waits as long as it needs (people, agents); else the default. */
  readonly unbounded?: boolean;
  /** A forEach of more than FOREACH_CHILD_THRESHOLD items runs in child workflows (runItems), which run tools only. */
  readonly chunked?: boolean;
  /**
   * Runs the action once (Temporal retries tools): its output and the attempts it took. `scope` is
   * what templates read (a forEach item's included), `label` the step's name for this run
   * (`enrich[2]`). May return a promise it did not make itself: each promise a workflow makes costs.
   */
  run(run: PlanRunContext, step: CompiledStep, scope: Record<string, unknown>, timeout: string | undefined, label: string): Promise<ToolResult>;
}
