/**
 * What models cost: `models.prices` in cadre.config.yaml, USD per million tokens by model id as
 * plans name it (`openai:gpt-4o-mini`), with cached input at its own price. A model with no price
 * has no cost, and says so where a cost is shown: never a silent zero.
 */
import { z } from 'zod';
import type { TokenUsage } from '../protocol/usage';

const perMillion = z.number().min(0).max(10_000);

export const priceSchema = z.strictObject({
  /** USD per million input tokens not read from the provider's cache. */
  input: perMillion,
  output: perMillion,
  /** USD per million input tokens read from the cache; unset, the same as `input`. */
  cachedInput: perMillion.optional(),
});
export type Price = z.infer<typeof priceSchema>;
export type PriceTable = Record<string, Price>;

/** A config file's prices, and the model of requests that name none (`loadPricing`). */
export interface Pricing {
  prices: PriceTable;
  defaultModel?: string;
}

/** `provider:model` (or `compatible:<endpoint>/<model>`), as plans name models. */
export const pricesSchema = z.record(z.string().regex(/^[a-z-]+:.+$/, 'must be a model id as plans name it, e.g. openai:gpt-4o-mini'), priceSchema);

/** USD for `usage` at `price`; cached input tokens are part of the input tokens. */
export function costOf(usage: TokenUsage, price: Price): number {
  const cached = Math.min(usage.cachedInputTokens ?? 0, usage.inputTokens);
  const usd = (usage.inputTokens - cached) * price.input + cached * (price.cachedInput ?? price.input) + usage.outputTokens * price.output;
  return usd / 1_000_000;
}

/** A cost as people read it: dollars, with as many decimals as a small one needs. */
export function formatUsd(usd: number): string {
  return usd === 0 ? '$0' : usd >= 0.01 ? `$${usd.toFixed(2)}` : `$${usd.toPrecision(2)}`;
}
