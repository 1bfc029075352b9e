/**
 * An agent's budget ledger (docs/budgets.md), in its workflow: durable, and replayed from history.
 * Each model turn is sent with what is left, and the activity holds the turn to it (its output cut
 * to fit, or not started: providers/turn-budget.ts); the turn's usage and cost are settled here
 * when it ends, from what the provider reported. Tool calls are counted before they run. Past the
 * warning share, the next turn is told what is left; at a cap, a person extends it or the agent
 * stops (`onBudget`). The arithmetic is budget/ledger.ts. Workflow code.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import { type Budget, type BudgetDimension, type BudgetLimits, type BudgetSummary, BUDGET_UNITS, describeSpend, parseBudgetAnswer } from '../../protocol/budget';
import { AgentLedger } from '../../budget/ledger';
import type { ModelTurnResult } from '../../activities';
import type { HumanWaits } from '../plan/waits';

export class BudgetLedger {
  private readonly book: AgentLedger;
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
    this.book = new AgentLedger(budget, carried);
  }

  /** What the next model turn may use: the caps that bound a turn (tool calls do not). */
  left(): BudgetLimits {
    return this.book.left();
  }

  /** A turn ended: what it used, as the provider reported it, and its cost when the model has a price. */
  settle(turn: ModelTurnResult): void {
    this.book.settle(turn.usage.inputTokens + turn.usage.outputTokens, turn.costUsd ?? 0);
  }

  /** Said to the model once past the warning share: what is left, and to wrap up. Undefined: nothing to say. */
  warning(): string | undefined {
    const used = this.book.warning();
    if (used === undefined) return undefined;
    this.warn(`${this.label}: ${used} used (warning at ${Math.round(this.budget.warnAt * 100)}%)`);
    return `Budget: ${used} used. Wrap up: finish the task and give your final answer in the next turns.`;
  }

  /** `calls` more tool calls fit the cap (or it was extended to fit them); at the cap a person decides, or the agent stops. */
  async toolCalls(calls: number): Promise<void> {
    while (!this.book.fits(calls)) await this.exhausted('toolCalls', `its next turn asks for ${calls} tool calls`);
    this.book.spent.toolCalls += calls;
  }

  /**
   * A cap is reached: with `onBudget: stop` the agent fails with BudgetExhausted; with `ask` it
   * waits for a person, who extends the cap (`extend=<more>`) or stops it (`stop`).
   */
  async exhausted(dimension: BudgetDimension, why: string): Promise<void> {
    const spent = describeSpend(this.book.limits, this.book.spent);
    const stopped = () => ApplicationFailure.nonRetryable(`${this.label} spent its budget (${spent}): ${why}`, 'BudgetExhausted', { budget: this.summary() });
    if (this.budget.onBudget === 'stop') throw stopped();
    const id = `${this.label}/budget-${++this.asked}`;
    const prompt = `${this.label} spent its budget (${spent}): ${why}. extend=<more ${BUDGET_UNITS[dimension]}> to go on, or stop`;
    const answer = await this.waits.wait({ id, kind: 'budget', prompt }, { opened: this.waitsChanged, closed: this.waitsChanged });
    const decided = answer === undefined ? undefined : parseBudgetAnswer(answer);
    if (!decided || 'stop' in decided) throw stopped();
    this.book.extend(dimension, decided.extend);
  }

  summary(): BudgetSummary {
    return this.book.summary();
  }
}
