/** What model calls cost, and how it reads: plain arithmetic, loaded by CLI commands without the price table's schema. */
import type { TokenUsage } from '../protocol/usage';

/** A model's price, USD per million tokens (prices.ts holds the table's schema). */
export interface UnitPrice {
  input: number;
  output: number;
  cachedInput?: number;
}

/** USD for `usage` at `price`; cached input tokens are part of the input tokens. */
export function costOf(usage: TokenUsage, price: UnitPrice): number {
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
  const usd = (usage.inputTokens - cached) * price.input + cached * (price.cachedInput ?? price.input) + usage.outputTokens * price.output;
  return usd / 1_000_000;
}

/** A cost as people read it: dollars, with as many decimals as a small one needs. */
export function formatUsd(usd: number): string {
  return usd === 0 ? '$0' : usd >= 0.01 ? `$${usd.toFixed(2)}` : `$${usd.toPrecision(2)}`;
}

