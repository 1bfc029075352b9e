/**
 * A plan's budget as a pool of leases (docs/budgets.md): the arithmetic of the run's one ledger,
 * kept in the run's workflow (workflows/plan/run-budget.ts sends what this decides). Agents ask
 * before a turn their lease cannot carry; asks are granted in order, each what it needs and what it
 * wants up to a fair share of what is free, never more than is free. When the first in line
 * cannot be given what it needs, every other agent is recalled (gives back what it holds unspent)
 * before the budget counts as spent. An agent settles once, when it ends. Pure.
 */
import { type Budget, type BudgetDimension, type BudgetLimits, type BudgetSpend, type BudgetSummary, BUDGET_DIMENSIONS, NO_SPEND, addSpend, budgetReached, describeSpend } from '../protocol/budget';
import type { LeaseAsk, LeaseGrant } from '../protocol/budget-lease';

interface Lease {
  workflowId: string;
  granted: BudgetSpend;
  /** What its agent said it had spent, at its last ask. */
  reported: BudgetSpend;
  warned?: boolean;
  /** The seq of the last ask answered: a recall counts on the agent having that answer. */
  told: number;
}

/** What the run does next: answers to send, a shortage for `onBudget` to decide, a recall to time, a warning to publish. */
export interface PoolOutcome {
  send: { workflowId: string; grant: LeaseGrant }[];
  short?: { dimension: BudgetDimension; ask: LeaseAsk };
  recalling?: true;
  warned?: string;
}

/** What a continued run carries of its pool: its caps as extended, and what was spent (open leases in full). */
export interface PoolCarry extends BudgetSummary {
  warned: boolean;
}

export class BudgetPool {
  readonly limits: BudgetLimits;
  private spent: BudgetSpend = { ...NO_SPEND };
  private readonly leases = new Map<string, Lease>();
  /** Leases settled: a second settle, or an ask after it, is not taken. */
  private readonly closed = new Set<string>();
  /** Asks not granted yet, in the order they came. */
  private readonly queue: LeaseAsk[] = [];
  /** A shortage waits for `onBudget` (a person, or the stop): nothing is granted meanwhile. */
  private deciding = false;
  /** Leases recalled and not answered yet; and whether this shortage recalled them already. */
  private readonly recalling = new Set<string>();
  private recalled = false;
  private stopped?: string;
  private warned = false;
  private warning?: string;
  private out: PoolOutcome = { send: [] };

  constructor(
    private readonly budget: Pick<Budget, 'tokens' | 'toolCalls' | 'cost' | 'warnAt'>,
    carried?: PoolCarry,
  ) {
    this.limits = Object.fromEntries(BUDGET_DIMENSIONS.flatMap((d) => (budget[d] !== undefined ? [[d, budget[d]]] : [])));
    if (carried) [this.spent, this.warned] = [{ ...carried.spent }, carried.warned];
    if (carried) Object.assign(this.limits, carried.limits);
  }

  /** Leases open: agents of the run not yet settled. */
  get open(): number {
    return this.leases.size;
  }

  /** Why no more is given, once the budget stopped. */
  get stoppedBecause(): string | undefined {
    return this.stopped;
  }

  /** Recalled agents that have not answered yet. */
  get recalls(): number {
    return this.recalling.size;
  }

  ask(ask: LeaseAsk): PoolOutcome {
    if (this.closed.has(ask.lease)) return this.done();
    const lease = this.leases.get(ask.lease) ?? { workflowId: ask.workflowId, granted: { ...NO_SPEND }, reported: { ...NO_SPEND }, told: 0 };
    if (lease.workflowId !== ask.workflowId) return this.done();
    lease.reported = ask.spent;
    this.leases.set(ask.lease, lease);
    this.queue.push(ask);
    this.checkWarning();
    return this.drain();
  }

  settle(key: string, workflowId: string, spent: BudgetSpend): PoolOutcome {
    const lease = this.leases.get(key);
    if (this.closed.has(key) || (lease && lease.workflowId !== workflowId)) return this.done();
    this.closed.add(key);
    this.leases.delete(key);
    this.recalling.delete(key);
    this.spent = addSpend(this.spent, { tokens: Math.max(0, spent.tokens), toolCalls: Math.max(0, spent.toolCalls), cost: Math.max(0, spent.cost) });
    this.checkWarning();
    return this.drain();
  }

  /** A recalled agent gave back what it held unspent; its own ask, if it waits, now needs that much more. */
  giveBack(key: string, workflowId: string, returned: BudgetSpend): PoolOutcome {
    const lease = this.leases.get(key);
    if (!lease || lease.workflowId !== workflowId) return this.done();
    const waiting = this.queue.find((a) => a.lease === key);
    for (const d of BUDGET_DIMENSIONS) {
      const back = Math.min(Math.max(0, returned[d]), lease.granted[d]);
      lease.granted[d] -= back;
      if (waiting && back > 0) waiting.need[d] = (waiting.need[d] ?? 0) + back;
    }
    this.recalling.delete(key);
    return this.drain();
  }

  /** The agents recalled that did not answer in time (terminated, say) keep what they hold. */
  recallTimedOut(): PoolOutcome {
    this.recalling.clear();
    return this.drain();
  }

  /** A person raised the cap that ran out: the warning may be given again at the new cap. */
  extend(d: BudgetDimension, more: number): PoolOutcome {
    this.limits[d] = (this.limits[d] ?? 0) + more;
    this.warned = false;
    this.warning = undefined;
    for (const lease of this.leases.values()) lease.warned = false;
    this.deciding = false;
    return this.drain();
  }

  /** No more is given: every ask waiting is refused, and every agent stops before its next turn. */
  stop(reason: string): PoolOutcome {
    this.stopped ??= reason;
    this.deciding = false;
    for (const [key, lease] of this.leases) this.out.send.push({ workflowId: lease.workflowId, grant: { lease: key, seq: 0, stop: this.stopped } });
    return this.drain();
  }

  summary(): BudgetSummary & { reserved: BudgetSpend } {
    let reserved = NO_SPEND;
    for (const lease of this.leases.values()) reserved = addSpend(reserved, lease.granted);
    return { limits: { ...this.limits }, spent: { ...this.spent }, reserved };
  }

  carry(): PoolCarry {
    const { spent, reserved } = this.summary();
    return { limits: { ...this.limits }, spent: addSpend(spent, reserved), warned: this.warned };
  }

  /** "16000 of 20000 tokens": settled spend plus what running agents last said they had spent. */
  describeUsed(): string {
    let used = this.spent;
    for (const lease of this.leases.values()) used = addSpend(used, lease.reported);
    return describeSpend(this.limits, used);
  }

  /** Grants waiting asks in order while each fits; at the first that does not, a recall, then a shortage. */
  private drain(): PoolOutcome {
    while (this.queue.length > 0 && !this.deciding) {
      const ask = this.queue[0] as LeaseAsk;
      const lease = this.leases.get(ask.lease);
      if (!lease) {
        this.queue.shift(); // settled while it waited
        continue;
      }
      if (this.stopped !== undefined) {
        this.queue.shift();
        this.answer(ask, lease, { stop: this.stopped });
        continue;
      }
      const short = BUDGET_DIMENSIONS.find((d) => this.limits[d] !== undefined && (ask.need[d] ?? 0) > this.free(d) + 1e-12);
      if (short !== undefined) {
        if (!this.recalled) this.recall(ask.lease);
        if (this.recalling.size === 0) [this.deciding, this.out.short] = [true, { dimension: short, ask }];
        break;
      }
      this.recalled = false;
      this.queue.shift();
      const grant: BudgetLimits = {};
      for (const d of BUDGET_DIMENSIONS) {
        if (this.limits[d] === undefined) continue;
        grant[d] = this.share(d, ask.need[d] ?? 0, ask.want[d] ?? 0);
        lease.granted[d] += grant[d] as number;
      }
      const warning = this.warningFor(lease);
      this.answer(ask, lease, { grant, ...(warning !== undefined && { warning }) });
    }
    return this.done();
  }

  private answer(ask: LeaseAsk, lease: Lease, answer: Omit<LeaseGrant, 'lease' | 'seq'>): void {
    lease.told = ask.seq;
    this.out.send.push({ workflowId: lease.workflowId, grant: { lease: ask.lease, seq: ask.seq, ...answer } });
  }

  /**
   * What an ask gets under a cap: what it needs, and what it wants up to a fair share of what is
   * free (one part more than there are leases: agents yet to come get theirs); a fair share when it
   * cannot say what it wants (its first turn). Never more than is free.
   */
  private share(d: BudgetDimension, need: number, want: number): number {
    const free = this.free(d);
    const fair = free / (this.leases.size + 1);
    const amount = Math.min(free, Math.max(need, want > 0 ? Math.min(want, fair) : fair));
    return d === 'cost' ? amount : Math.floor(amount);
  }

  private free(d: BudgetDimension): number {
    let held = this.spent[d];
    for (const lease of this.leases.values()) held += lease.granted[d];
    return Math.max(0, (this.limits[d] as number) - held);
  }

  /** Every agent but `short` (those waiting in line too) gives back what its lease holds unspent. */
  private recall(short: string): void {
    this.recalled = true;
    for (const [key, lease] of this.leases) {
      if (key === short) continue;
      this.recalling.add(key);
      this.out.send.push({ workflowId: lease.workflowId, grant: { lease: key, seq: 0, recall: true, after: lease.told } });
    }
    if (this.recalling.size > 0) this.out.recalling = true;
  }

  /** Past the warning share, once per cap as extended: every agent running is told to wrap up (one waiting for a grant, with it). */
  private checkWarning(): void {
    let used = this.spent;
    for (const lease of this.leases.values()) used = addSpend(used, lease.reported);
    if (this.warned || budgetReached(this.limits, used, this.budget.warnAt) === undefined) return;
    this.warned = true;
    const spent = describeSpend(this.limits, used);
    this.out.warned = `the run's budget: ${spent} used (warning at ${Math.round(this.budget.warnAt * 100)}%)`;
    this.warning = `The run's budget: ${spent} used. Wrap up: finish your task and give your final answer in the next turns.`;
    const queued = new Set(this.queue.map((a) => a.lease));
    for (const [key, lease] of this.leases) {
      if (!queued.has(key)) this.out.send.push({ workflowId: lease.workflowId, grant: { lease: key, seq: 0, warning: this.warningFor(lease) as string } });
    }
  }

  private warningFor(lease: Lease): string | undefined {
    if (this.warning === undefined || lease.warned) return undefined;
    lease.warned = true;
    return this.warning;
  }

  private done(): PoolOutcome {
    const out = this.out;
    this.out = { send: [] };
    return out;
  }
}
