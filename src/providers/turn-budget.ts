/**
 * A model turn held to what its agent's budget has left (docs/budgets.md): before the call, the
 * input it sends (estimated high: three bytes a token) and the output it may write must fit; the
 * output it may write is cut to fit. A turn that cannot write even a few tokens within what is left
 * is not started: BudgetExhausted, which the agent answers by asking a person or stopping.
 */
import { ErrorTypes, permanent } from '../errors/application-failures';
import type { BudgetLimits } from '../protocol/budget';
import { estimateTokens } from './context-window';
import type { ModelTurnRequest } from './model-turn';
import type { Price } from './prices';

/** Fewer output tokens than this cannot carry a tool call or an answer: the turn does not start. */
export const MIN_TURN_OUTPUT = 32;
/**
 * A budgeted turn that sets no output cap of its own asks for at most this: what is left may be far
 * more than a model may write in one reply, and a provider refuses a cap above its model's.
 */
export const BUDGETED_OUTPUT_DEFAULT = 4096;

export function heldToBudget(request: ModelTurnRequest, left: BudgetLimits, price: Price | undefined, model: string | undefined): ModelTurnRequest {
  if (left.cost !== undefined && !price) {
    throw permanent(ErrorTypes.ModelConfigInvalid, `no price for ${model ?? 'the default model'} in cadre.config.yaml (models.prices): a cost budget needs one`);
  }
  const input = estimateTokens(JSON.stringify({ system: request.system, tools: request.tools, messages: request.messages }));
  const byTokens = left.tokens === undefined ? Infinity : left.tokens - input;
  const byCost = left.cost === undefined || !price || price.output === 0 ? Infinity : ((left.cost - (input * price.input) / 1e6) * 1e6) / price.output;
  const output = Math.floor(Math.min(request.maxOutputTokens ?? BUDGETED_OUTPUT_DEFAULT, byTokens, byCost));
  if (output < MIN_TURN_OUTPUT) {
    // Which cap holds the turn back: the one a person would extend.
    const dimension = byTokens <= byCost ? 'tokens' : 'cost';
    const message = `the next model turn needs about ${input + MIN_TURN_OUTPUT} tokens (${input} to send, ${MIN_TURN_OUTPUT} to write); its budget has ${describeLeft(left)} left`;
    // What the turn needs at least, so a lease on a plan's budget can ask its run for that much more.
    const needs = { tokens: input + MIN_TURN_OUTPUT, ...(price && { cost: (input * price.input + MIN_TURN_OUTPUT * price.output) / 1e6 }) };
    throw permanent(ErrorTypes.BudgetExhausted, message, { dimension, needs });
  }
  return { ...request, maxOutputTokens: output };
}

function describeLeft(left: BudgetLimits): string {
  return [left.tokens !== undefined && `${left.tokens} tokens`, left.cost !== undefined && `$${left.cost.toPrecision(2)}`].filter(Boolean).join(' and ');
}
