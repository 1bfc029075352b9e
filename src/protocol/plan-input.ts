/**
 * runPlan's input, checked before use: a compiled plan (cadre's client), or one that continued as
 * new (workflows/plan/continue-as-new.ts). A plan document is validated whole, every problem with
 * its path, by a local activity (workflows/plan/plan-document.ts). Pure.
 */
import { count, listOf, map, oneOf, optional, shape, text } from './input-checks';

/** A plan's budget: numbers above zero, a time as text (its duration is checked where it is read). */
const positive = (v: Record<string, unknown>, at: string) =>
  ['tokens', 'toolCalls', 'cost'].find((k) => v[k] !== undefined && !((v[k] as number) > 0)) !== undefined ? `${at}: tokens, toolCalls and cost must be above 0` : undefined;
const BUDGET = shape({ tokens: optional(count), toolCalls: optional(count), cost: optional(count), time: optional(text), warnAt: count, onBudget: oneOf('ask', 'stop') }, positive);

const COMPILED_PLAN_FIELDS = {
  plan: shape({
    name: text,
    workspace: text,
    inputs: map,
    steps: listOf(shape({ id: text, needs: listOf(text), action: shape({ kind: oneOf('tool', 'ask', 'agent', 'decide', 'echo') }) })),
    budget: optional(BUDGET),
  }),
  inputs: map,
};

export const COMPILED_PLAN = shape(COMPILED_PLAN_FIELDS);

/** The plan and inputs as before, and what the run before carried. */
export const CONTINUED_PLAN = shape({
  ...COMPILED_PLAN_FIELDS,
  continued: shape({ runs: count, startedAtMs: count, records: listOf(map), outputs: map, completed: listOf(text), activityIds: map, workers: listOf(map), stream: map }),
});
