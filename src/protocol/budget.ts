/**
 * An agent's budget (docs/budgets.md): caps on the tokens, tool calls and USD its model turns and
 * tools may spend, the share at which it is told to wrap up, and what happens at the cap. Its
 * ledger lives in the agent's workflow; every model turn is held, before it starts, to what is
 * left. Pure: workflow code and clients use it.
 */

export type BudgetDimension = 'tokens' | 'toolCalls' | 'cost';
export const BUDGET_DIMENSIONS: readonly BudgetDimension[] = ['tokens', 'toolCalls', 'cost'];

export interface BudgetLimits {
  tokens?: number;
  toolCalls?: number;
  /** USD, priced by `models.prices` in cadre.config.yaml. */
  cost?: number;
}

export interface Budget extends BudgetLimits {
  /** The share of any cap at which the agent is told what is left and asked to wrap up. */
  warnAt: number;
  /** At a cap: wait for a person (`extend=<more>` or `stop`), or stop at once. */
  onBudget: 'ask' | 'stop';
}

/**
 * A plan's budget: the caps its agents share (their subtasks and specialists too: each holds a lease
 * from the run, protocol/budget-lease.ts), and how long the run may take.
 */
export interface PlanBudget extends Budget {
  /** A duration (`30m`): the run's wall time, from its start, that the caps bound with the rest. */
  time?: string;
}

/** A plan's ledger as clients see it: the caps, what ended agents spent, what running ones hold. */
export interface RunBudgetSummary extends BudgetSummary {
  /** Granted to agents still running (their leases), not yet settled. */
  reserved: BudgetSpend;
  /** When the run's time budget ends (ISO), when it has one. */
  deadline?: string;
}

export interface BudgetSpend {
  tokens: number;
  toolCalls: number;
  cost: number;
}

/** A ledger as clients see it and a session carries it: the caps (as extended) and what was spent. */
export interface BudgetSummary {
  limits: BudgetLimits;
  spent: BudgetSpend;
}

export const DEFAULT_WARN_AT = 0.8;

export const NO_SPEND: BudgetSpend = { tokens: 0, toolCalls: 0, cost: 0 };

/** What is left under each cap that is set. */
export function budgetLeft(limits: BudgetLimits, spent: BudgetSpend): BudgetLimits {
  const left: BudgetLimits = {};
  for (const d of BUDGET_DIMENSIONS) {
    const cap = limits[d];
    if (cap !== undefined) left[d] = Math.max(0, cap - spent[d]);
  }
  return left;
}

/** The first cap whose share spent is at least `share` (1: the cap itself). */
export function budgetReached(limits: BudgetLimits, spent: BudgetSpend, share: number): BudgetDimension | undefined {
  return BUDGET_DIMENSIONS.find((d) => limits[d] !== undefined && spent[d] >= (limits[d] as number) * share);
}

/** "700 of 1000 tokens, 2 of 10 tool calls, $0.0021 of $0.01" */
export function describeSpend(limits: BudgetLimits, spent: BudgetSpend): string {
  const parts: string[] = [];
  if (limits.tokens !== undefined) parts.push(`${spent.tokens} of ${limits.tokens} tokens`);
  if (limits.toolCalls !== undefined) parts.push(`${spent.toolCalls} of ${limits.toolCalls} tool calls`);
  if (limits.cost !== undefined) parts.push(`$${round(spent.cost)} of $${limits.cost}`);
  return parts.join(', ');
}

/** What `extend=<n>` adds, in the unit of the cap it raises (a plan's time: seconds). */
export const BUDGET_UNITS: Record<BudgetDimension | 'time', string> = { tokens: 'tokens', toolCalls: 'tool calls', cost: 'USD', time: 'seconds' };

/**
 * A budget as a role narrows it (a role file can only narrow what it is given): each cap the lower
 * of the two, the earlier warning; the role's `onBudget` when it says one.
 */
export function narrowBudget(given: Budget | undefined, role: BudgetLimits & Partial<Pick<Budget, 'warnAt' | 'onBudget'>>): Budget {
  const caps: BudgetLimits = {};
  for (const d of BUDGET_DIMENSIONS) {
    const both = [given?.[d], role[d]].filter((v): v is number => v !== undefined);
    if (both.length > 0) caps[d] = Math.min(...both);
  }
  return { ...caps, warnAt: Math.min(given?.warnAt ?? DEFAULT_WARN_AT, role.warnAt ?? DEFAULT_WARN_AT), onBudget: role.onBudget ?? given?.onBudget ?? 'ask' };
}

/** The sum of two spends. */
export function addSpend(a: BudgetSpend, b: BudgetSpend): BudgetSpend {
  return { tokens: a.tokens + b.tokens, toolCalls: a.toolCalls + b.toolCalls, cost: a.cost + b.cost };
}

/** A person's answer to a spent budget: `stop`, or `extend=<n>` (also `extend:<n>`), n > 0. Undefined: neither. */
export function parseBudgetAnswer(value: string): { stop: true } | { extend: number } | undefined {
  if (value.trim() === 'stop') return { stop: true };
  const match = /^extend[=:]\s*\$?(\d+(?:\.\d+)?)$/.exec(value.trim());
  const extend = match ? Number(match[1]) : NaN;
  return Number.isFinite(extend) && extend > 0 ? { extend } : undefined;
}

/** A plan's ledger: "14500 of 20000 tokens spent; 2000 tokens held by running agents; time ends …". */
export function describeRunSpend(budget: RunBudgetSummary): string {
  const { tokens, toolCalls, cost } = budget.reserved;
  const parts = [tokens > 0 && `${tokens} tokens`, toolCalls > 0 && `${toolCalls} tool calls`, cost > 0 && `$${round(cost)}`].filter(Boolean);
  const held = parts.length > 0 ? `; ${parts.join(', ')} held by running agents` : '';
  return `${describeSpend(budget.limits, budget.spent)} spent${held}${budget.deadline ? `; time ends ${budget.deadline}` : ''}`;
}

function round(usd: number): string {
  return usd >= 0.01 ? usd.toFixed(2) : usd.toPrecision(2);
}
