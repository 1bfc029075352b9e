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

/** What `extend=<n>` adds, in the unit of the cap it raises. */
export const BUDGET_UNITS: Record<BudgetDimension, string> = { tokens: 'tokens', toolCalls: 'tool calls', cost: 'USD' };

/** A person's answer to a spent budget: `stop`, or `extend=<n>` (also `extend:<n>`), n > 0. Undefined: neither. */
export function parseBudgetAnswer(value: string): { stop: true } | { extend: number } | undefined {
  if (value.trim() === 'stop') return { stop: true };
  const match = /^extend[=:]\s*\$?(\d+(?:\.\d+)?)$/.exec(value.trim());
  const extend = match ? Number(match[1]) : NaN;
  return Number.isFinite(extend) && extend > 0 ? { extend } : undefined;
}

function round(usd: number): string {
  return usd >= 0.01 ? usd.toFixed(2) : usd.toPrecision(2);
}
