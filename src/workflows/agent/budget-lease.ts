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
  private settled = false;

  constructor(
    private readonly owner: string,
    private readonly label: string,
  ) {
    const { workflowId, runId } = workflowInfo();
    this.key = `${workflowId}@${runId}`;
    // Anyone can send signals: only the run's, to this lease, are taken.
    setHandler(budgetGrantSignal, (grant) => {
      if (!wellFormed(grant, GRANT_SIGNAL) || grant.lease !== this.key) return;
      if (this.book.heard(grant, this.seq)) this.answer = grant;
      this.answerRecall();
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
    if (this.book.stopped !== undefined) throw ApplicationFailure.nonRetryable(`${this.label}: ${this.book.stopped}`, 'BudgetExhausted');
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
