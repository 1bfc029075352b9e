/**
 * Prices a plan needs (E207): a plan's or an agent's cost budget is priced by `models.prices` in
 * cadre.config.yaml, and a model without a price would fail the agent at its first turn. The
 * prices of every model the plan's agents and decisions name are listed for `cadre validate
 * --preflight`. Read from the config file here; the workers read their own (the same file, in a
 * deployment that shares it).
 */
import type { CompiledPlan } from '../plan-format/types';
import type { Price, Pricing } from '../providers/prices';
import { problem, type PreflightProblem } from './codes';

/** The model each agent and decide step calls: its own, or the default one. */
function modelsOf(plan: CompiledPlan, pricing: Pricing): { at: string; model?: string; cost?: string }[] {
  // A plan's cost budget is spent by every agent and decision; an agent's own, by that agent.
  const planCost = plan.budget?.cost !== undefined ? 'budget.cost' : undefined;
  return plan.steps.flatMap((step, index) => {
    const { action } = step;
    const at = `steps[${index}].${action.kind}`;
    if (action.kind === 'agent') return [{ at, model: action.agent.model ?? plan.team?.model ?? pricing.defaultModel, cost: action.agent.budget?.cost !== undefined ? `${at}.budget.cost` : planCost }];
    if (action.kind === 'decide') return [{ at, model: action.decide.model ?? pricing.defaultModel, cost: planCost }];
    return [];
  });
}

/** Whether a plan has a cost budget: its own, or one of its agents'. */
export function hasCostBudget(plan: CompiledPlan): boolean {
  return plan.budget?.cost !== undefined || plan.steps.some((s) => s.action.kind === 'agent' && s.action.agent.budget?.cost !== undefined);
}

export function priceProblems(plan: CompiledPlan, pricing: Pricing): PreflightProblem[] {
  return modelsOf(plan, pricing).flatMap(({ at, model, cost }) => {
    if (cost === undefined) return [];
    if (model === undefined) return [problem('CADRE-E207', cost, `a cost budget needs a model with a price: ${at} names no model, and there is no default (CADRE_MODEL, models.default)`)];
    return pricing.prices[model] ? [] : [problem('CADRE-E207', cost, `no price for ${model} (${at}) in cadre.config.yaml (models.prices): a cost budget needs one`)];
  });
}

/** Each model the plan calls, with its price or none (scripted models cost nothing and are left out). */
export function knownPrices(plan: CompiledPlan, pricing: Pricing): Record<string, Price | null> {
  const models = modelsOf(plan, pricing).flatMap(({ model }) => (model === undefined || model.startsWith('scripted:') ? [] : [model]));
  return Object.fromEntries([...new Set(models)].sort().map((model) => [model, pricing.prices[model] ?? null]));
}

/** "openai:gpt-4o-mini $0.15 in, $0.6 out, $0.075 cached in per million tokens; openai:gpt-4o no price" */
export function describePrices(prices: Record<string, Price | null>): string {
  const one = ([model, price]: [string, Price | null]) =>
    price ? `${model} $${price.input} in, $${price.output} out${price.cachedInput !== undefined ? `, $${price.cachedInput} cached in` : ''} per million tokens` : `${model} no price`;
  return Object.entries(prices).map(one).join('; ');
}
