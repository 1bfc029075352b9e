/**
 * A plan's budget (docs/budgets.md) in its run: the one ledger, a pool of leases (budget/pool.ts),
 * in workflow state, so it is durable and replays. This side takes the agents' signals (asks,
 * returns, settles), sends the pool's answers, and decides at a cap: with `onBudget: ask` a person
 * extends it (`extend=<more>`) or stops it, with `stop` the run stops, and then it ends
 * `budget_exhausted`. A time budget bounds the run's wall time. Workflow code.
 */
import { condition, getExternalWorkflowHandle, isCancellation, sleep, workflowInfo } from '@temporalio/workflow';
import { type BudgetDimension, type PlanBudget, type RunBudgetSummary, BUDGET_UNITS, parseBudgetAnswer } from '../../protocol/budget';
import { ASK_SIGNAL, RETURN_SIGNAL, SETTLE_SIGNAL, budgetAskSignal, budgetGrantSignal, budgetReturnSignal, budgetSettleSignal } from '../../protocol/budget-lease';
import { count, map, shape, wellFormed } from '../../protocol/input-checks';
import { BudgetPool, type PoolCarry, type PoolOutcome } from '../../budget/pool';
import { durationMs } from '../../plan-format/duration';
import { isoAt, nowMs } from '../common/clock';
import { type RunLimits, onSignal } from '../common/run-limits';
import type { HumanWaits } from './waits';

/** How long a stopped budget waits for its agents to end their turns before the run cancels them. */
const STOP_GRACE = '2 minutes';
/** How long a recall waits for the agents' answers (an agent answers once its turn under way ends; a terminated one never does). */
const RECALL_WAIT = '5 minutes';

/** What of a plan run its budget uses. */
export interface BudgetedRun {
  readonly plan: { budget?: PlanBudget };
  readonly waits: HumanWaits;
  readonly limits: RunLimits;
  readonly agents: { runBudget?: { owner: string } };
  readonly paused: boolean;
  setPaused(paused: boolean): unknown;
  readonly stream: { publish(event: { type: 'budget_warning'; step: string; message: string } | { type: 'budget_spent'; used: string }): void };
  changed(): void;
  publishStatus(): void;
}

/** What a run carries over continue-as-new (no agent runs then: open leases are charged in full). */
export interface RunBudgetCarry {
  pool: PoolCarry;
  deadlineMs?: number;
  asked: number;
}

export class RunBudget {
  private readonly pool: BudgetPool;
  private asked = 0;
  private deadlineMs?: number;
  /** The spend last said on the run's stream. */
  private said?: string;

  /** @param end the run stops, `budget_exhausted`, once no more is given and its agents have ended. */
  constructor(
    private readonly budget: PlanBudget,
    private readonly run: BudgetedRun,
    private readonly end: (reason: string) => void,
    carried?: RunBudgetCarry,
  ) {
    this.pool = new BudgetPool(budget, carried?.pool);
    // A new run starts now; a continued one carries its deadline.
    this.deadlineMs = carried ? carried.deadlineMs : budget.time !== undefined ? nowMs() + durationMs(budget.time) : undefined;
    this.asked = carried?.asked ?? 0;
    run.agents.runBudget = { owner: workflowInfo().workflowId };
    // Anyone can send signals: only well-formed ones from the run's own agents (their ids start with the run's) are taken.
    const ours = (from: { workflowId: string; lease: string }) => from.workflowId.startsWith(`${workflowInfo().workflowId}/`) && from.lease.startsWith(`${from.workflowId}@`);
    onSignal(run.limits, budgetAskSignal, (ask) => wellFormed(ask, ASK_SIGNAL) && ours(ask) && this.act(this.pool.ask(ask)));
    onSignal(run.limits, budgetSettleSignal, (s) => wellFormed(s, SETTLE_SIGNAL) && ours(s) && this.act(this.pool.settle(s.lease, s.workflowId, s.spent)));
    onSignal(run.limits, budgetReturnSignal, (r) => wellFormed(r, RETURN_SIGNAL) && ours(r) && this.act(this.pool.giveBack(r.lease, r.workflowId, r.returned)));
  }

  /** Bounds the run's wall time, when the budget has one: at the deadline, a person extends it or the run stops. */
  async watchTime(): Promise<void> {
    try {
      while (this.deadlineMs !== undefined && !this.stopped) {
        const left = this.deadlineMs - nowMs();
        if (left > 0) {
          await sleep(left);
          continue;
        }
        // Past its time no new step starts while a person decides.
        const paused = this.run.paused;
        this.run.setPaused(true);
        const more = await this.decide('time', `its time budget (${this.budget.time}) ended at ${isoAt(this.deadlineMs)}`);
        if (more === undefined) return;
        this.run.setPaused(paused);
        this.deadlineMs = Math.max(this.deadlineMs, nowMs()) + more * 1000;
      }
    } catch (err) {
      // The run was cancelled: its end does not wait for the budget's timer.
      if (!isCancellation(err)) throw err;
    }
  }

  summary(): RunBudgetSummary {
    return { ...this.pool.summary(), ...(this.deadlineMs !== undefined && { deadline: isoAt(this.deadlineMs) }) };
  }

  carry(): RunBudgetCarry {
    return { pool: this.pool.carry(), ...(this.deadlineMs !== undefined && { deadlineMs: this.deadlineMs }), asked: this.asked };
  }

  /** No more is given: the run stops once its agents have ended their turns. */
  get stopped(): boolean {
    return this.pool.stoppedBecause !== undefined;
  }

  /** Every lease settled (its agent ended), or STOP_GRACE passed: an agent stopped by the budget fails after this, so its failure does not cut the others' turns short. */
  async settled(): Promise<void> {
    await condition(() => this.pool.open === 0, STOP_GRACE);
  }

  /** Sends what the pool decided; times a recall; takes a shortage to `onBudget`. */
  private act(outcome: PoolOutcome): void {
    for (const { workflowId, grant } of outcome.send) {
      // An agent that ended meanwhile cannot be told: its lease settles (or stays charged) all the same.
      getExternalWorkflowHandle(workflowId).signal(budgetGrantSignal, grant).catch(() => undefined);
    }
    if (outcome.warned) this.run.stream.publish({ type: 'budget_warning', step: '(run)', message: outcome.warned });
    // The spend as it grows (`cadre watch`), said when it changed.
    const used = this.pool.describeUsed();
    if (used !== this.said) this.run.stream.publish({ type: 'budget_spent', used: (this.said = used) });
    if (outcome.recalling) {
      void condition(() => this.pool.recalls === 0, RECALL_WAIT).then(
        (answered) => answered || this.act(this.pool.recallTimedOut()),
        () => undefined,
      );
    }
    if (outcome.short) void this.decideShort(outcome.short.dimension, outcome.short.ask.workflowId, outcome.short.ask.need[outcome.short.dimension]);
    this.shown();
  }

  /** A wait opened or closed, or spend was reported: the run's status and details show it. */
  private shown(): void {
    this.run.changed();
    this.run.publishStatus();
  }

  private async decideShort(d: BudgetDimension, who: string, need: number | undefined): Promise<void> {
    const more = await this.decide(d, `${who} needs ${need} more ${BUDGET_UNITS[d]} for its next turn`);
    if (more !== undefined) this.act(this.pool.extend(d, more));
  }

  /**
   * A cap is reached: with `onBudget: stop` the run stops; with `ask` a person extends the cap
   * (returned: how much more) or stops it.
   */
  private async decide(d: BudgetDimension | 'time', why: string): Promise<number | undefined> {
    const reason = `the run spent its budget (${this.pool.describeUsed()}): ${why}`;
    if (this.budget.onBudget === 'stop') return this.stop(reason);
    const prompt = `${reason}. extend=<more ${BUDGET_UNITS[d]}> to go on, or stop`;
    const answer = await this.run.waits.wait({ id: `budget-${++this.asked}`, kind: 'budget', prompt }, { opened: () => this.shown(), closed: () => this.shown() });
    const decided = answer === undefined ? undefined : parseBudgetAnswer(answer);
    return !decided || 'stop' in decided ? this.stop(`${reason}; stopped by a person`) : decided.extend;
  }

  /**
   * Stops the run's agents at their next turn or tool call (a turn under way ends first: what it
   * used is counted), then the run, once they have settled or STOP_GRACE has passed.
   */
  private stop(reason: string): undefined {
    if (this.stopped) return undefined;
    this.act(this.pool.stop(reason));
    void this.settled().then(
      () => (this.end(reason), this.shown()),
      () => undefined, // the run was cancelled meanwhile
    );
    return undefined;
  }
}

/** The plan's budget, when it has one: its agents are told to lease from this run. */
export function runBudget(run: BudgetedRun, carried: RunBudgetCarry | undefined, end: (reason: string) => void): RunBudget | undefined {
  // A run's carried state is cadre's own, but checked like any input.
  const checked = wellFormed(carried, shape({ pool: shape({ limits: map, spent: map }), asked: count })) ? carried : undefined;
  return run.plan.budget && new RunBudget(run.plan.budget, run, end, checked);
}
