/**
 * An agent's lease on its plan's budget, as arithmetic (the pool is budget/pool.ts; the agent's
 * workflow side, signals and waits, is workflows/agent/budget-lease.ts): what the run granted,
 * what the agent spent, what is left, and what to ask for next. Pure.
 */
import { type BudgetDimension, type BudgetLimits, type BudgetSpend, BUDGET_DIMENSIONS, NO_SPEND } from '../protocol/budget';
import type { LeaseGrant } from '../protocol/budget-lease';

/** What a turn may write when the agent cannot yet say (its first turn): the provider's usual cap. */
const TURN_OUTPUT = 4096;
/** How many turns like the last an agent asks for at a time: each ask and grant is a signal, and a run takes at most 10,000. */
const TURNS_A_LEASE = 3;
/** The caps a model turn spends (tool calls are counted apart). */
const TURN_CAPS = ['tokens', 'cost'] as const;

export interface LeaseAskAmounts {
  need: BudgetLimits;
  want: BudgetLimits;
}

export class LeaseBook {
  private readonly granted: BudgetSpend = { ...NO_SPEND };
  readonly spent: BudgetSpend = { ...NO_SPEND };
  /** The run's caps, known from its first answer. */
  private capped?: BudgetDimension[];
  /** The last turn's tokens and cost: what the next one likely needs. */
  private last = { tokens: TURN_OUTPUT, cost: 0 };
  /** The run's warning, to say to the model once; and why the run stopped (the agent ends before its next turn or tool call). */
  warning?: string;
  stopped?: string;
  /** A model turn is under way: what it was sent with is not given back until it ends. */
  private inTurn = false;
  /** Recalled by the run, counting on its answer to this ask (seq: signals may arrive in either order); the last answer applied. */
  private recalled?: number;
  private applied = 0;

  /** For each of the run's caps, granted less spent. */
  left(): BudgetLimits {
    return Object.fromEntries((this.capped ?? []).map((d) => [d, Math.max(0, this.granted[d] - this.spent[d])]));
  }

  /** Before a turn: what to ask for when the lease may not carry one like the last (and what a turn may write), a few turns' worth. */
  beforeTurn(): LeaseAskAmounts | undefined {
    const left = this.left();
    const turn = { tokens: this.last.tokens + TURN_OUTPUT, cost: this.last.cost * 2 };
    if (this.capped && TURN_CAPS.every((d) => left[d] === undefined || (left[d] as number) >= turn[d])) return undefined;
    return { need: {}, want: { tokens: turn.tokens * TURNS_A_LEASE, cost: turn.cost * TURNS_A_LEASE } };
  }

  /** A turn the lease could not carry: it needs `needs` (what it sends and a few tokens to write) in all. */
  refused(needs: BudgetLimits): LeaseAskAmounts {
    const left = this.left();
    const need: BudgetLimits = {};
    for (const d of TURN_CAPS) if (needs[d] !== undefined) need[d] = Math.max(0, (needs[d] as number) - (left[d] ?? 0));
    return { need, want: { tokens: (needs.tokens ?? 0) + TURN_OUTPUT } };
  }

  /** `calls` tool calls about to run: what to ask for first, if the lease does not hold them (or the run's caps are not known yet). */
  toolCalls(calls: number): LeaseAskAmounts | undefined {
    if (!this.capped) return { need: {}, want: {} };
    const left = this.left().toolCalls;
    return left !== undefined && left < calls ? { need: { toolCalls: calls - left }, want: { toolCalls: calls - left } } : undefined;
  }

  /** Whether the lease, not the agent's own budget, holds a turn back: what it has left is the smaller. */
  holds(d: BudgetDimension, own: BudgetLimits): boolean {
    const mine = this.left()[d];
    return mine !== undefined && (own[d] === undefined || mine < (own[d] as number));
  }

  turnStarted(): void {
    this.inTurn = true;
  }

  turnEnded(tokens: number, cost: number): void {
    this.spent.tokens += tokens;
    this.spent.cost += cost;
    if (tokens > 0 || cost > 0) this.last = { tokens, cost };
    this.inTurn = false;
  }

  /** The run's warning, said to the model once. */
  takeWarning(): string | undefined {
    const warning = this.warning;
    this.warning = undefined;
    return warning;
  }

  /** A message from the run (to this lease): whether it answers ask `seq`, the one the agent waits on. */
  heard(message: Omit<LeaseGrant, 'lease'>, seq: number): boolean {
    if (message.warning !== undefined) this.warning = message.warning;
    if (message.stop !== undefined) this.stopped = message.stop;
    if (message.recall === true) this.recalled = Math.max(this.recalled ?? 0, message.after ?? 0);
    return message.seq === seq && (message.grant !== undefined || message.stop !== undefined);
  }

  spendCalls(calls: number): void {
    this.spent.toolCalls += calls;
  }

  /** The run's answer to ask `seq`. */
  granting(seq: number, grant: BudgetLimits): void {
    this.capped = BUDGET_DIMENSIONS.filter((d) => grant[d] !== undefined);
    for (const d of this.capped) this.granted[d] += Math.max(0, grant[d] as number);
    this.applied = seq;
  }

  /** A recall is answered between turns, once the answer it counts on is here: what the lease holds unspent, given back (the next turn asks again). */
  giveBack(): BudgetSpend | undefined {
    if (this.recalled === undefined || this.inTurn || this.applied < this.recalled) return undefined;
    this.recalled = undefined;
    const returned = { ...NO_SPEND };
    for (const d of this.capped ?? []) {
      returned[d] = Math.max(0, this.granted[d] - this.spent[d]);
      this.granted[d] -= returned[d];
    }
    return returned;
  }
}

/** What a turn is held to: the tighter of the agent's own budget and its lease, for each cap a turn spends. */
export function turnBudget(own: BudgetLimits | undefined, leased: BudgetLimits | undefined): BudgetLimits | undefined {
  if (!own && !leased) return undefined;
  const held: BudgetLimits = { ...own };
  for (const d of TURN_CAPS) {
    const lease = leased?.[d];
    if (lease !== undefined) held[d] = Math.min(held[d] ?? Infinity, lease);
  }
  return held;
}
