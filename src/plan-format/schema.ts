/** The zod schema of a plan file (YAML or JSON). Semantic checks live in validate.ts. */
import { z } from 'zod';
import { durationMs } from './duration';
import { bounded, duration, modelName, planBudget } from './fields';
import { KIND_FIELDS, STEP_KINDS } from './kinds';
import { agentSchema } from './kinds/agent';
import { askSchema } from './kinds/ask';
import { decideSchema } from './kinds/decide';
import { toolCallFields } from './kinds/tool';
import {
  MAX_FOREACH_ITEMS,
  MAX_INPUT_NAME_LENGTH,
  MAX_PLAN_NAME_LENGTH,
  MAX_STEPS,
  MAX_STEP_ID_LENGTH,
  MAX_WORKSPACE_LENGTH,
} from './limits';
import { formatCount } from './text';
import { ON_FAILURE, ON_TIMEOUT } from './types';
import { sandboxSchema } from '../sandbox/schema';
import { egressSchema } from '../egress/policy';

/** A step id, as in GitHub Actions and Argo: `fetch-data`, `security_audit`, `build2` (templates and `when` read `steps.fetch-data`). */
export const STEP_ID = /^[A-Za-z](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?$/;
/** Input names and loop variables: names an expression reads bare, so no hyphen (`a-b` is a subtraction). */
export const PLAIN_NAME = /^[A-Za-z][A-Za-z0-9_]*$/;
/** A team's specialists run as child workflows `<run>/consult-<n>`, beside the steps' `<run>/<step id>`. */
const RESERVED_STEP_ID = /^consult-\d+$/;
export const MAX_CONCURRENCY = 200;
export const PLAN_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
/** Names templates and `when` read at the root; a loop variable may not hide them. */
const RESERVED_NAMES = ['steps', 'inputs', 'index'];

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

/**
 * A workspace any host can make: a clone of `repo` (a URL git fetches, or a path on the hosts) at
 * `ref` (the repository's default branch unless given), into the host's workspace root.
 */
const repositoryWorkspace = z.strictObject({
  repo: bounded('workspace repo', MAX_WORKSPACE_LENGTH)
    .min(1)
    .refine((repo) => !repo.startsWith('-') && ![...repo].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f), 'a workspace repo is a URL or a path, not an option, with no control characters'),
  ref: z
    .string()
    .max(200)
    .refine(isBranchName, 'a workspace ref is a branch name: letters, digits, "/", ".", "_" and "-", not starting with "-" or "/", no "..", not ending in "/" or ".lock"')
    .optional(),
});

/** What `git check-ref-format --branch` takes, narrowed to plain characters (the host checks with git too). */
export function isBranchName(ref: string): boolean {
  return /^[A-Za-z0-9_][A-Za-z0-9._/-]*$/.test(ref) && !ref.includes('..') && !ref.includes('//') && !ref.endsWith('/') && !ref.endsWith('.lock') && !ref.includes('/.');
}

/** A git worktree the step's tools run in; steps naming the same repo and task share one. */
export const worktreeSchema = z.strictObject({
  repo: z.string().min(1).max(4096).refine((v) => !v.includes('\0'), 'contains a NUL byte'),
  task: z
    .string()
    .max(MAX_STEP_ID_LENGTH)
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'a worktree task is a name of letters, digits, ".", "_" and "-"')
    .optional(),
  base: z.string().min(1).max(250).optional(),
  cleanup: z.enum(['onSuccess', 'always', 'never']).optional(),
});

export const stepSchema = z
  .strictObject({
    id: bounded('step id', MAX_STEP_ID_LENGTH)
      .regex(STEP_ID, 'step id must start with a letter and hold only letters, digits, _ and - (not at the end)')
      .refine((id) => !RESERVED_STEP_ID.test(id), { error: 'step ids consult-<n> are kept for the child workflows of a team\'s specialists: pick another id' }),
    name: z.string().optional(),
    dependsOn: z.array(z.string()).max(MAX_STEPS).optional(),
    when: z.string().min(1).optional(),
    forEach: z
      .custom<string | unknown[]>((v) => typeof v === 'string' || Array.isArray(v), {
        error: 'forEach must be a list or one template such as "{{ steps.x.output.json.items }}"',
      })
      .refine((v) => !Array.isArray(v) || v.length <= MAX_FOREACH_ITEMS, {
        error: (issue) =>
          `forEach lists ${formatCount((issue.input as unknown[]).length)} items; a plan may list at most ${formatCount(MAX_FOREACH_ITEMS)} (read longer lists from a file in a step)`,
      })
      .optional(),
    as: bounded('loop variable', MAX_STEP_ID_LENGTH)
      .regex(PLAIN_NAME, 'loop variable must be a plain name: a letter, then letters, digits and _')
      .refine((name) => !RESERVED_NAMES.includes(name), { error: `loop variable cannot be ${RESERVED_NAMES.join(', ')}: templates read those` })
      .optional(),
    // Temporal allows 2,000 pending activities per workflow; stay well under it.
    concurrency: z.int().min(1).max(MAX_CONCURRENCY).optional(),
    local: z.boolean().optional(),
    // What the step does: one kind's fields (kinds/).
    ...KIND_FIELDS,
    compensate: z.strictObject(toolCallFields).optional(),
    worktree: worktreeSchema.optional(),
    ...policies,
  })
  .superRefine((step, ctx) => {
    const kinds = STEP_KINDS.filter((kind) => step[kind as keyof typeof step] !== undefined);
    if (kinds.length === 0) ctx.addIssue({ code: 'custom', message: `a step needs one of ${STEP_KINDS.map((k) => `"${k}"`).join(', ')}`, path: [] });
    for (const extra of kinds.slice(1)) {
      ctx.addIssue({ code: 'custom', message: `a step has one of ${STEP_KINDS.map((k) => `"${k}"`).join(', ')}; this one also has "${kinds[0]}"`, path: [extra] });
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
    if (step.worktree !== undefined && step.tool === undefined && step.agent === undefined) {
      ctx.addIssue({ code: 'custom', message: '"worktree" needs a "tool" or an "agent": only they run in a worktree', path: ['worktree'] });
    }
    if (step.tool?.startsWith('git.') && step.worktree === undefined) {
      ctx.addIssue({ code: 'custom', message: `${step.tool} runs in a worktree: give the step a "worktree"`, path: ['worktree'] });
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

/** A plan whose agents work as a team: each is a worker that says its state (`signal_state`). */
const team = z.strictObject({
  /** Reminders to a worker that ends a turn without a tool call, before it is marked blocked. */
  silentTurns: z.int().min(0).max(10).optional(),
  /** The model of workers that name none (specialists answering questions, subtasks). */
  model: modelName.optional(),
  /** The model a worker switches to after repeated rate limits. */
  fallbackModel: modelName.optional(),
  /** A specialist's answer at least this sure goes back to the asker; a less sure one goes to a person. */
  confidence: z.number().min(0).max(1).optional(),
  /** How long a question escalated to a person waits. */
  escalationTimeout: duration.optional(),
  /** The answer a worker takes when nobody answers in time; without one it goes to error. */
  defaultAnswer: z.string().min(1).max(10_000).optional(),
  /** Specialists consulted one behind the other for one question (A asks B, B asks C). */
  maxConsultDepth: z.int().min(1).max(5).optional(),
  /** Subtasks of subtasks. */
  maxSubtaskDepth: z.int().min(1).max(5).optional(),
  /** Subtasks one worker may start. */
  maxSubtasks: z.int().min(1).max(20).optional(),
  /** A running worker with no progress, no heartbeat and no state signal for this long is reported blocked. */
  stuckAfter: duration.refine((d) => durationMs(d) >= 1000, 'stuckAfter must be at least 1s').optional(),
});

export const planSchema = z.strictObject({
  name: bounded('plan name', MAX_PLAN_NAME_LENGTH).regex(PLAN_NAME, 'plan name must hold only a-z, 0-9 and "-"'),
  description: z.string().optional(),
  workspace: z.union([bounded('workspace', MAX_WORKSPACE_LENGTH), repositoryWorkspace]).optional(),
  inputs: z
    .record(z.string(), input)
    // Checked here rather than as the record's key schema, whose failures zod reports without their reason.
    .superRefine((inputs, ctx) => {
      for (const name of Object.keys(inputs)) {
        if (name.length > MAX_INPUT_NAME_LENGTH) {
          ctx.addIssue({ code: 'custom', path: [name], message: `input name is ${name.length} characters long; use at most ${MAX_INPUT_NAME_LENGTH}` });
        } else if (!PLAIN_NAME.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'input names must be plain names: a letter, then letters, digits and _' });
      }
    })
    .optional(),
  defaults: z.strictObject(policies).optional(),
  team: team.optional(),
  /** Caps all its agents share, with their subtasks, and its wall time (docs/budgets.md). */
  budget: planBudget.optional(),
  /** How its tools' processes are contained: `none`, or { env, read, limits } (docs/security.md). */
  sandbox: sandboxSchema.optional(),
  /** Hosts its tools may reach (http.request directly, commands through the sandbox's proxy); none by default. */
  egress: egressSchema.optional(),
  steps: z.array(stepSchema).min(1, 'a plan needs at least one step'),
  output: z.unknown().optional(),
});

/** Every field name the plan format knows, for suggestions when a field is unknown. */
export const FIELD_NAMES = [
  ...new Set([planSchema, stepSchema, askSchema, agentSchema, decideSchema, retry, input, worktreeSchema, team].flatMap((schema) => Object.keys(schema.shape))),
];

export type PlanFile = z.infer<typeof planSchema>;
export type StepFile = z.infer<typeof stepSchema>;
