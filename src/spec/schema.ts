/** The zod schema of a plan file (YAML or JSON). Semantic checks live in validate.ts. */
import { z } from 'zod';
import { isDuration } from './duration';
import { ON_FAILURE, ON_TIMEOUT } from './types';

export const STEP_ID = /^[A-Za-z][A-Za-z0-9_]*$/;
export const MAX_CONCURRENCY = 200;
export const PLAN_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

const duration = z.string({ error: 'expected a duration such as 30s, 5m or 1h' }).refine(isDuration, {
  error: (issue) => `bad duration "${String(issue.input)}": use a number with ms, s, m, h or d (e.g. 30s, 5m)`,
});

const retry = z.strictObject({
  maximumAttempts: z.int().min(1).optional(),
  initialInterval: duration.optional(),
  backoffCoefficient: z.number().min(1).optional(),
  maximumInterval: duration.optional(),
  nonRetryableErrorTypes: z.array(z.string()).optional(),
});

const policies = {
  timeout: duration.optional(),
  retry: retry.optional(),
  onFailure: z.enum(ON_FAILURE).optional(),
  onTimeout: z.enum(ON_TIMEOUT).optional(),
};

const toolCall = {
  tool: z.string().min(1),
  with: z.record(z.string(), z.unknown()).optional(),
};

const ask = z.strictObject({
  question: z.string().min(1),
  choices: z.array(z.string().min(1)).min(1).optional(),
  timeout: duration.optional(),
});

export const stepSchema = z
  .strictObject({
    id: z.string().regex(STEP_ID, 'step id must start with a letter and hold only letters, digits and _'),
    name: z.string().optional(),
    dependsOn: z.array(z.string()).optional(),
    when: z.string().min(1).optional(),
    forEach: z.union([z.string(), z.array(z.unknown())]).optional(),
    as: z.string().regex(STEP_ID, 'loop variable must be a plain name').optional(),
    // Temporal allows 2,000 pending activities per workflow; stay well under it.
    concurrency: z.int().min(1).max(MAX_CONCURRENCY).optional(),
    local: z.boolean().optional(),
    tool: toolCall.tool.optional(),
    with: toolCall.with,
    ask: ask.optional(),
    compensate: z.strictObject(toolCall).optional(),
    ...policies,
  })
  .superRefine((step, ctx) => {
    if (step.tool === undefined && step.ask === undefined) {
      ctx.addIssue({ code: 'custom', message: 'a step needs either "tool" or "ask"', path: [] });
    }
    if (step.tool !== undefined && step.ask !== undefined) {
      ctx.addIssue({ code: 'custom', message: 'a step has either "tool" or "ask", not both', path: ['ask'] });
    }
    if (step.with !== undefined && step.tool === undefined) {
      ctx.addIssue({ code: 'custom', message: '"with" needs a "tool"', path: ['with'] });
    }
    if (step.local !== undefined && step.tool === undefined) {
      ctx.addIssue({ code: 'custom', message: '"local" needs a "tool"', path: ['local'] });
    }
    if (step.forEach !== undefined && step.ask !== undefined) {
      ctx.addIssue({ code: 'custom', message: 'an "ask" step cannot loop with forEach', path: ['forEach'] });
    }
    if (step.forEach === undefined && (step.as !== undefined || step.concurrency !== undefined)) {
      ctx.addIssue({ code: 'custom', message: '"as" and "concurrency" need "forEach"', path: [] });
    }
  });

const input = z.strictObject({
  type: z.enum(['string', 'number', 'boolean', 'json']).default('string'),
  default: z.unknown().optional(),
  description: z.string().optional(),
});

export const planSchema = z.strictObject({
  name: z.string().regex(PLAN_NAME, 'plan name must hold only a-z, 0-9 and "-"'),
  description: z.string().optional(),
  workspace: z.string().optional(),
  inputs: z.record(z.string().regex(STEP_ID, 'input names must be plain names'), input).optional(),
  defaults: z.strictObject(policies).optional(),
  steps: z.array(stepSchema).min(1, 'a plan needs at least one step'),
  output: z.unknown().optional(),
});

export type PlanFile = z.infer<typeof planSchema>;
export type StepFile = z.infer<typeof stepSchema>;
