/**
 * An agent's budget ledger (docs/budgets.md), in its workflow: durable, and replayed from history.
 * Each model turn is sent with what is left, and the activity holds the turn to it (its output cut
 * to fit, or not started: providers/turn-budget.ts); the turn's usage and cost are settled here
 * when it ends, from what the provider reported. Tool calls are counted before they run. Past the
 * warning share, the next turn is told what is left; at a cap, a person extends it or the agent
 * stops (`onBudget`). Workflow code.
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import { type Budget, type BudgetDimension, type BudgetLimits, type BudgetSpend, type BudgetSummary, BUDGET_UNITS, budgetLeft, budgetReached, describeSpend, parseBudgetAnswer } from '../../protocol/budget';
import type { ModelTurnResult } from '../../activities';
import type { HumanWaits } from '../plan/waits';

export class BudgetLedger {
  private readonly limits: BudgetLimits;
  readonly spent: BudgetSpend = { tokens: 0, toolCalls: 0, cost: 0 };
  /** The warning was given for the caps as they are (an extension may call for another). */
  private warned = false;
  private asked = 0;

  constructor(
    private readonly budget: Budget,
    private readonly label: string,
    private readonly waits: HumanWaits,
    private readonly waitsChanged: () => void,
    private readonly warn: (message: string) => void,
    /** A session's ledger from the run before (continue-as-new): its caps as extended, and what was spent. */
    carried?: BudgetSummary,
  ) {
    this.limits = { ...(budget.tokens !== undefined && { tokens: budget.tokens }), ...(budget.toolCalls !== undefined && { toolCalls: budget.toolCalls }), ...(budget.cost !== undefined && { cost: budget.cost }) };
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

  /** A turn ended: what it used, as the provider reported it, and its cost when the model has a price. */
  settle(turn: ModelTurnResult): void {
    this.spent.tokens += turn.usage.inputTokens + turn.usage.outputTokens;
    this.spent.cost += turn.costUsd ?? 0;
  }

  /** Said to the model once past the warning share: what is left, and to wrap up. Undefined: nothing to say. */
  warning(): string | undefined {
    if (this.warned || budgetReached(this.limits, this.spent, this.budget.warnAt) === undefined) return undefined;
    this.warned = true;
    const message = `Budget: ${describeSpend(this.limits, this.spent)} used. Wrap up: finish the task and give your final answer in the next turns.`;
    this.warn(`${this.label}: ${describeSpend(this.limits, this.spent)} used (warning at ${Math.round(this.budget.warnAt * 100)}%)`);
    return message;
  }

  /** `calls` more tool calls fit the cap (or it was extended to fit them); at the cap a person decides, or the agent stops. */
  async toolCalls(calls: number): Promise<void> {
    while (this.limits.toolCalls !== undefined && this.spent.toolCalls + calls > this.limits.toolCalls) {
      await this.exhausted('toolCalls', `its next turn asks for ${calls} tool calls`);
    }
    this.spent.toolCalls += calls;
  }

  /**
   * A cap is reached: with `onBudget: stop` the agent fails with BudgetExhausted; with `ask` it
   * waits for a person, who extends the cap (`extend=<more>`) or stops it (`stop`).
   */
  async exhausted(dimension: BudgetDimension, why: string): Promise<void> {
    const spent = describeSpend(this.limits, this.spent);
    const stopped = () => ApplicationFailure.nonRetryable(`${this.label} spent its budget (${spent}): ${why}`, 'BudgetExhausted', { budget: this.summary() });
    if (this.budget.onBudget === 'stop') throw stopped();
    const id = `${this.label}/budget-${++this.asked}`;
    const unit = BUDGET_UNITS[dimension];
    const prompt = `${this.label} spent its budget (${spent}): ${why}. extend=<more ${unit}> to go on, or stop`;
    const answer = await this.waits.wait({ id, kind: 'budget', prompt }, { opened: this.waitsChanged, closed: this.waitsChanged });
    const decided = answer === undefined ? undefined : parseBudgetAnswer(answer);
    if (!decided || 'stop' in decided) throw stopped();
    this.limits[dimension] = (this.limits[dimension] ?? 0) + decided.extend;
    this.warned = false;
  }

  summary(): BudgetSummary {
    return { limits: { ...this.limits }, spent: { ...this.spent } };
  }
}

/** A model turn the activity did not start for want of budget: the cap that held it back. */
export function refusedTurn(err: unknown): BudgetDimension | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (!(cause instanceof ApplicationFailure) || cause.type !== 'BudgetExhausted') return undefined;
  return (cause.details?.[0] as { dimension?: BudgetDimension } | undefined)?.dimension === 'cost' ? 'cost' : 'tokens';
}
