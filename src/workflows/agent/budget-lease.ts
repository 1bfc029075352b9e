/**
 * An agent's lease on its plan's budget, in its workflow (protocol/budget-lease.ts; the arithmetic
 * is budget/lease.ts, the run's side workflows/plan/run-budget.ts). Before a turn its lease may not
 * carry, the agent asks the run and waits for the answer; between turns it answers a recall by
 * giving back what it holds unspent; when it ends, it settles once. Workflow code.
 */
import { ApplicationFailure, CancellationScope, condition, getExternalWorkflowHandle, setHandler, workflowInfo } from '@temporalio/workflow';
import type { BudgetLimits } from '../../protocol/budget';
import { GRANT_SIGNAL, type LeaseGrant, budgetAskSignal, budgetGrantSignal, budgetReturnSignal, budgetSettleSignal } from '../../protocol/budget-lease';
import { wellFormed } from '../../protocol/input-checks';
import { type LeaseAskAmounts, LeaseBook } from '../../budget/lease';
import type { ModelTurnResult } from '../../activities';

export class BudgetLease {
  private readonly key: string;
  /** What was granted and spent (budget/lease.ts): what a turn may use is `book.left()`. */
  readonly book = new LeaseBook();
  private seq = 0;
  private answer?: LeaseGrant;
  private warning?: string;
  private settled = false;
  /** The run stopped: the agent ends before its next turn or tool call (a turn under way ends first, so its usage is counted). */
  private stopped?: string;

  constructor(
    private readonly owner: string,
    private readonly label: string,
  ) {
    const { workflowId, runId } = workflowInfo();
    this.key = `${workflowId}@${runId}`;
    // Anyone can send signals: only the run's, to this lease, are taken.
    setHandler(budgetGrantSignal, (grant) => {
      if (!wellFormed(grant, GRANT_SIGNAL) || grant.lease !== this.key) return;
      if (grant.warning !== undefined) this.warning = grant.warning;
      if (grant.stop !== undefined) this.stopped = grant.stop;
      if (grant.recall === true) this.book.recall(grant.after ?? 0);
      this.answerRecall();
      if (grant.seq === this.seq && (grant.grant !== undefined || grant.stop !== undefined)) this.answer = grant;
    });
  }

  /** Before a turn: more from the run when the lease may not carry one like the last. */
  async beforeTurn(): Promise<void> {
    this.checkStopped();
    const ask = this.book.beforeTurn();
    if (ask) await this.more(ask);
  }

  /** A turn the lease could not carry (the activity did not start it): at least what it needs, or the run stops it. */
  async turnRefused(needs: BudgetLimits): Promise<void> {
    await this.more(this.book.refused(needs));
  }

  /** A model turn starts: what the lease holds is the turn's until it ends. */
  turnStarted(): void {
    this.book.turnStarted();
  }

  /** The turn ended (its usage spent, if it ran): a recall that came meanwhile is answered now. */
  turnEnded(turn?: ModelTurnResult): void {
    this.book.turnEnded(turn ? turn.usage.inputTokens + turn.usage.outputTokens : 0, turn?.costUsd ?? 0);
    this.answerRecall();
  }

  /** `calls` tool calls, counted before they run: the run grants them, or stops the agent. */
  async toolCalls(calls: number): Promise<void> {
    this.checkStopped();
    for (let ask = this.book.toolCalls(calls); ask; ask = this.book.toolCalls(calls)) await this.more(ask);
    this.book.spendCalls(calls);
  }

  /** The run's warning, said to the model once. */
  takeWarning(): string | undefined {
    const warning = this.warning;
    this.warning = undefined;
    return warning;
  }

  /** The agent ended (however it ended): its spend goes to the run, once. */
  async settle(): Promise<void> {
    if (this.settled) return;
    this.settled = true;
    await CancellationScope.nonCancellable(() =>
      getExternalWorkflowHandle(this.owner)
        .signal(budgetSettleSignal, { workflowId: workflowInfo().workflowId, lease: this.key, spent: { ...this.book.spent } })
        .catch(() => undefined),
    );
  }

  private answerRecall(): void {
    const returned = this.book.giveBack();
    if (!returned) return;
    getExternalWorkflowHandle(this.owner)
      .signal(budgetReturnSignal, { workflowId: workflowInfo().workflowId, lease: this.key, returned })
      .catch(() => undefined); // the run ended: nothing to give back to
  }

  private checkStopped(): void {
    if (this.stopped !== undefined) throw ApplicationFailure.nonRetryable(`${this.label}: ${this.stopped}`, 'BudgetExhausted');
  }

  private async more({ need, want }: LeaseAskAmounts): Promise<void> {
    const seq = ++this.seq;
    this.answer = undefined;
    try {
      await getExternalWorkflowHandle(this.owner).signal(budgetAskSignal, { workflowId: workflowInfo().workflowId, lease: this.key, seq, need, want, spent: { ...this.book.spent } });
    } catch (err) {
      throw ApplicationFailure.nonRetryable(`${this.label}: its run, which holds the budget, cannot be asked for more: ${(err as Error).message}`, 'BudgetExhausted');
    }
    await condition(() => this.answer !== undefined);
    const answer = this.answer as unknown as LeaseGrant;
    this.checkStopped();
    this.book.granting(seq, answer.grant ?? {});
    this.answerRecall();
  }
}
