/** `decide:` steps: an LLM decision, whose output is exactly one of its choices. */
import { z } from 'zod';
import { modelName } from '../fields';
import { brief, planKind } from './kind';
import { modelAt } from './model-path';

export const decideSchema = z.strictObject({
  prompt: z.string().min(1),
  choices: z.array(z.string().min(1).max(200)).min(2).max(50),
  model: modelName.optional(),
});

export const decideKind = planKind({
  kind: 'decide',
  fields: { decide: decideSchema },
  compile: ({ decide }, baseDir) => ({ kind: 'decide', decide: { ...decide, ...(decide.model && { model: modelAt(decide.model, baseDir) }) } }),
  templated: ['decide'],
  // Its turns live in its own child workflow's history: the plan pays one child per run of the step.
  cost: (action) => ({ unit: 'child', input: action }),
  describe: (action) => `decide: ${action.decide.choices.map((c) => brief(c, 20)).join(' | ')}`,
});
