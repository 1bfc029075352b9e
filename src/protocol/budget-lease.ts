/**
 * A plan's budget, shared by its agents (docs/budgets.md). The run keeps the one ledger; each agent
 * of the run (its steps' agents, their subtasks, the team's specialists) holds a lease from it and
 * holds its turns to the lease. An agent asks the run for more before a turn its lease cannot
 * carry, gives back what it holds unspent when the run recalls it (another agent cannot go on),
 * and settles once when it ends: what it spent goes to the run's ledger, the rest back to the
 * pool. Pure: workflow code and clients use it.
 */
import { defineSignal } from '@temporalio/workflow';
import type { BudgetLimits, BudgetSpend } from './budget';
import { count, flag, optional, shape, text } from './input-checks';

/** In an agent's input: the run whose budget it spends (every agent it starts spends it too). */
export interface BudgetOwner {
  /** The run's workflow id: leases are asked of it and settled with it. */
  owner: string;
}

/** An agent asks for more: at least `need` (or it cannot go on), `want` if the run can spare it. */
export interface LeaseAsk {
  workflowId: string;
  /** One lease per run of an agent's workflow (`<workflowId>@<runId>`): a retried agent holds a new one. */
  lease: string;
  seq: number;
  need: BudgetLimits;
  want: BudgetLimits;
  /** What the lease's holder has spent so far. */
  spent: BudgetSpend;
}

/** The run's answer: more to spend, or stop (the budget is spent and the run stops). */
export interface LeaseGrant {
  lease: string;
  seq: number;
  grant?: BudgetLimits;
  stop?: string;
  /** Past the warning share: what the agent tells its model, once. */
  warning?: string;
  /** Another agent cannot go on: give back what the lease holds unspent (after the turn under way). */
  recall?: true;
  /** A recall counts the run's answers up to this ask: the agent gives back once it has them (signals may arrive in either order). */
  after?: number;
}

/** What an agent gave back when the run recalled it. */
export interface LeaseReturn {
  workflowId: string;
  lease: string;
  returned: BudgetSpend;
}

/** An agent ended: what its lease spent, counted once. */
export interface LeaseSettle {
  workflowId: string;
  lease: string;
  spent: BudgetSpend;
}

export const budgetAskSignal = defineSignal<[LeaseAsk]>('budgetAsk');
export const budgetGrantSignal = defineSignal<[LeaseGrant]>('budgetGrant');
export const budgetSettleSignal = defineSignal<[LeaseSettle]>('budgetSettle');
export const budgetReturnSignal = defineSignal<[LeaseReturn]>('budgetReturn');

// Each signal's shape: anyone can send signals, so a workflow takes only a well-formed one.
const SPEND = shape({ tokens: count, toolCalls: count, cost: count });
const LIMITS = shape({ tokens: optional(count), toolCalls: optional(count), cost: optional(count) });
export const ASK_SIGNAL = shape({ workflowId: text, lease: text, seq: count, need: LIMITS, want: LIMITS, spent: SPEND });
export const GRANT_SIGNAL = shape({ lease: text, seq: count, grant: optional(LIMITS), stop: optional(text), warning: optional(text), recall: optional(flag), after: optional(count) });
export const SETTLE_SIGNAL = shape({ workflowId: text, lease: text, spent: SPEND });
export const RETURN_SIGNAL = shape({ workflowId: text, lease: text, returned: SPEND });
