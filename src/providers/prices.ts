/**
 * What models cost: `models.prices` in cadre.config.yaml, USD per million tokens by model id as
 * plans name it (`openai:gpt-4o-mini`), with cached input at its own price. A model with no price
 * has no cost, and says so where a cost is shown: never a silent zero.
 */
import { z } from 'zod';
import type { TokenUsage } from '../protocol/usage';
import { costOf } from './cost';

export { costOf, formatUsd } from './cost';

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

/** A run's analytics part with its agent steps' models named (the default for those that name none) and their spend priced. */
export function pricedPart<P extends { steps: { tool: string; model?: string; usage?: TokenUsage; costUsd?: number }[] }>(part: P, pricing: Pricing): P {
  const steps = part.steps.map((step) => {
    if (step.tool !== 'agent' && step.tool !== 'decide') return step;
    const model = step.model ?? pricing.defaultModel;
    const price = model === undefined ? undefined : pricing.prices[model];
    return { ...step, ...(model !== undefined && { model }), ...(price && step.usage && { costUsd: costOf(step.usage, price) }) };
  });
  return { ...part, steps };
}
