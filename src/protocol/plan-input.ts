/**
 * runPlan's input, checked before use: a compiled plan (cadre's client), or one that continued as
 * new (workflows/plan/continue-as-new.ts). A plan document is validated whole, every problem with
 * its path, by a local activity (workflows/plan/plan-document.ts). Pure.
 */
import { count, listOf, map, oneOf, shape, text } from './input-checks';

const COMPILED_PLAN_FIELDS = {
  plan: shape({
    name: text,
    workspace: text,
    inputs: map,
    steps: listOf(shape({ id: text, needs: listOf(text), action: shape({ kind: oneOf('tool', 'ask', 'agent', 'decide', 'echo') }) })),
  }),
  inputs: map,
};

export const COMPILED_PLAN = shape(COMPILED_PLAN_FIELDS);

/** The plan and inputs as before, and what the run before carried. */
export const CONTINUED_PLAN = shape({
  ...COMPILED_PLAN_FIELDS,
  continued: shape({ runs: count, startedAtMs: count, records: listOf(map), outputs: map, completed: listOf(text), activityIds: map, workers: listOf(map), stream: map }),
});
