/** Field schemas the plan format shares between its top level (schema.ts) and its step kinds (kinds/). */
import { z } from 'zod';
import { isDuration } from './duration';
import { shorten } from './text';

/** A string of at most `max` characters, saying how long it was when it is longer. */
export const bounded = (what: string, max: number) =>
  z.string().max(max, { error: (issue) => `${what} is ${String((issue.input as string).length)} characters long; use at most ${max}` });

// Ranges (durations above zero, attempts within an int32, ...) are checked by validate.ts with limits.ts.
export const duration = z.string({ error: 'expected a duration such as 30s, 5m or 1h' }).refine(isDuration, {
  error: (issue) => `bad duration "${shorten(String(issue.input))}": use a number with ms, s, m, h or d (e.g. 30s, 5m)`,
});

export const modelName = z.string().min(3).max(1000).regex(/^[a-z-]+:\S/, 'a model is provider:model, e.g. openai:gpt-4o-mini or scripted:./scenario.yaml');

const budgetCaps = {
  tokens: z.int().min(1).optional(),
  toolCalls: z.int().min(1).optional(),
  cost: z.number().gt(0).max(1_000_000).optional(),
  warnAt: z.number().gt(0).lt(1).optional(),
  onBudget: z.enum(['ask', 'stop']).optional(),
};
const capsSomething = (b: Record<string, unknown>) => Object.entries(b).some(([k, v]) => v !== undefined && k !== 'warnAt' && k !== 'onBudget');
/** An agent's budget (a role file's too, which narrows the one its agents are given). */
export const agentBudget = z.strictObject(budgetCaps).refine(capsSomething, 'a budget caps tokens, toolCalls or cost (USD)');
/** A plan's, which all its agents share, and its wall time. */
export const planBudget = z.strictObject({ ...budgetCaps, time: duration.optional() }).refine(capsSomething, 'a budget caps tokens, toolCalls, cost (USD) or time');
