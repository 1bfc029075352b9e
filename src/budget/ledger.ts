/**
 * An agent's own budget (or a session's), as arithmetic: its caps as extended, what it spent, what
 * a turn may use, and when to warn. Kept in the agent's workflow (workflows/agent/budget-ledger.ts
 * asks a person or stops at a cap). Pure.
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { type Budget, type BudgetDimension, type BudgetLimits, type BudgetSpend, type BudgetSummary, BUDGET_DIMENSIONS, NO_SPEND, budgetLeft, budgetReached, describeSpend } from '../protocol/budget';

export class AgentLedger {
  readonly limits: BudgetLimits;
  readonly spent: BudgetSpend = { ...NO_SPEND };
  /** The warning was given for the caps as they are (an extension may call for another). */
  private warned = false;

  constructor(
    private readonly budget: Pick<Budget, 'tokens' | 'toolCalls' | 'cost' | 'warnAt'>,
    /** A session's ledger from the run before (continue-as-new): its caps as extended, and what was spent. */
    carried?: BudgetSummary,
  ) {
    this.limits = Object.fromEntries(BUDGET_DIMENSIONS.flatMap((d) => (budget[d] !== undefined ? [[d, budget[d]]] : [])));
    if (carried) {
      Object.assign(this.limits, carried.limits);
      Object.assign(this.spent, carried.spent);
    }
  }

  /** What the next model turn may use: the caps that bound a turn (tool calls do not). */
  left(): BudgetLimits {
    const { tokens, cost } = budgetLeft(this.limits, this.spent);
    return { ...(tokens !== undefined && { tokens }), ...(cost !== undefined && { cost }) };
  }

  settle(tokens: number, cost: number): void {
    this.spent.tokens += tokens;
    this.spent.cost += cost;
  }

  /** Once past the warning share (for the caps as they are): what is used. Undefined: nothing to say. */
  warning(): string | undefined {
    if (this.warned || budgetReached(this.limits, this.spent, this.budget.warnAt) === undefined) return undefined;
    this.warned = true;
    return describeSpend(this.limits, this.spent);
  }

  /** Whether `calls` more tool calls fit the cap. */
  fits(calls: number): boolean {
    return this.limits.toolCalls === undefined || this.spent.toolCalls + calls <= this.limits.toolCalls;
  }

  extend(d: BudgetDimension, more: number): void {
    this.limits[d] = (this.limits[d] ?? 0) + more;
    this.warned = false;
  }

  summary(): BudgetSummary {
    return { limits: { ...this.limits }, spent: { ...this.spent } };
  }
}

/** A model turn the activity did not start for want of budget: the cap that held it back, and what the turn needs at least. */
export function refusedTurn(err: unknown): { cap: BudgetDimension; needs: BudgetLimits } | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (!(cause instanceof ApplicationFailure) || cause.type !== 'BudgetExhausted') return undefined;
  const details = cause.details?.[0] as { dimension?: BudgetDimension; needs?: BudgetLimits } | undefined;
  const needs = details?.needs;
  return { cap: details?.dimension === 'cost' ? 'cost' : 'tokens', needs: { ...(typeof needs?.tokens === 'number' && { tokens: needs.tokens }), ...(typeof needs?.cost === 'number' && { cost: needs.cost }) } };
}
