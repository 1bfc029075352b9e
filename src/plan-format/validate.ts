/**
 * Validates a parsed plan and compiles it to plain data for the `runPlan` workflow.
 * Every problem is reported at once, each with its path (`steps[3].dependsOn[0]`); a plan
 * that validates fits Temporal's limits (limits.ts), and validation itself never throws.
 */
import path from 'node:path';
import type { z } from 'zod';
import { PlanChecker, type Progress, editDistance } from './checker';
import { typedInput } from './inputs';
import { type PlanIssue, formatIssues, formatPath, sortIssues } from './issues';
import { jsonValueIssues } from './json-values';
import { MAX_STEPS } from './limits';
import { checkStartPayload, rawPlanSizeProblem } from './payload';
import { policyLimitIssues } from './policy-limits';
import { historyWarnings, parallelismIssue } from './run-estimate';
import { FIELD_NAMES, planSchema, type PlanFile, type StepFile } from './schema';
import { formatCount, shorten } from './text';
import { toSandboxSpec } from '../sandbox/schema';
import { toEgressPolicy } from '../egress/policy';
import { DEFAULT_WARN_AT } from '../protocol/budget';
import { CLONE_REPO, type CompiledPlan, type CompiledStep, TEAM_DEFAULTS, type InputSpec } from './types';
import { TEMPLATED_FIELDS, compileAction } from './kinds';
import { modelAt } from './kinds/model-path';
import { scenarioIssues } from './scenarios';

export { formatIssues, formatPath, type PlanIssue };

export type ValidationResult = { ok: true; plan: CompiledPlan; warnings: PlanIssue[] } | { ok: false; issues: PlanIssue[] };

export interface ValidateOptions {
  /** Directory a relative `workspace` is resolved against (where `cadre run` was called). */
  baseDir: string;
}

/** Past this many steps, only the count is reported: the rest would be noise. */
const MAX_CHECKED_STEPS = 2 * MAX_STEPS;

export function validatePlan(raw: unknown, options: ValidateOptions): ValidationResult {
  const progress: Progress = { stage: 'reading the plan', path: '' };
  try {
    return validate(raw, options, progress);
  } catch (err) {
    // A bug in cadre, not in the plan; still a report, never a crash.
    const reason = err instanceof Error ? `${err.name}: ${err.message.split('\n')[0].slice(0, 200)}` : String(err);
    return {
      ok: false,
      issues: [{ path: progress.path, message: `validation stopped unexpectedly while ${progress.stage} (${reason}); this is a bug in cadre, please report it with the plan` }],
    };
  }
}

function validate(raw: unknown, options: ValidateOptions, progress: Progress): ValidationResult {
  const notAPlan = topLevelProblem(raw);
  if (notAPlan) return { ok: false, issues: [notAPlan] };
  const plan = raw as Record<string, unknown>;
  const issues: PlanIssue[] = [];
  if (Array.isArray(plan.steps) && plan.steps.length > MAX_STEPS) {
    const count = plan.steps.length;
    issues.push({ path: 'steps', message: `${formatCount(count)} steps; a plan may have at most ${formatCount(MAX_STEPS)}: split it into several plans` });
    if (count > MAX_CHECKED_STEPS) return { ok: false, issues };
  }

  const stage = (name: string) => Object.assign(progress, { stage: name, path: '' });
  stage('checking values');
  const valueProblems = valueIssues(plan);
  stage('checking the shape of the plan');
  const parsed = planSchema.safeParse(raw);
  const shapeIssues = parsed.success ? [] : parsed.error.issues.flatMap(shapeIssue);
  issues.push(...valueProblems, ...shapeIssues);

  const checker = new PlanChecker(rawSteps(plan), rawInputs(plan), progress);
  issues.push(...checker.check(), ...checker.checkOutput(plan.output));

  stage("checking Temporal's limits");
  // A value of the wrong shape has one problem: its shape.
  const reported = new Set([...valueProblems, ...shapeIssues].map((issue) => issue.path));
  issues.push(...policyLimitIssues(plan).filter((issue) => !reported.has(issue.path)));
  issues.push(...inputDefaultIssues(plan.inputs).filter((issue) => !reported.has(issue.path)));
  const tooBig = rawPlanSizeProblem(plan);
  if (tooBig) issues.push(tooBig);
  if (issues.length > 0 || !parsed.success) return { ok: false, issues: sortIssues(issues) };

  stage('compiling');
  const compiled = compile(parsed.data, checker, options);
  const sharing = [...worktreeSharingIssues(compiled), ...clonedWorkspaceIssues(compiled), ...scenarioIssues(compiled), ...teamBudgetIssues(compiled)];
  if (sharing.length > 0) return { ok: false, issues: sortIssues(sharing) };
  stage('sizing the start request');
  const defaults = Object.fromEntries(Object.entries(compiled.inputs).filter(([, spec]) => spec.default !== undefined).map(([name, spec]) => [name, spec.default]));
  const payload = checkStartPayload(compiled, defaults, (name) => `inputs.${name}.default`);
  stage('checking how many tools can run at once');
  const parallel = parallelismIssue(compiled);
  const late = [payload.problem, parallel].filter((issue): issue is PlanIssue => issue !== undefined);
  if (late.length > 0) return { ok: false, issues: sortIssues(late) };

  stage('estimating the history of a run');
  const warnings = [...(payload.warning ? [payload.warning] : []), ...historyWarnings(compiled, payload.bytes)];
  return { ok: true, plan: compiled, warnings: sortIssues(warnings) };
}

/** A zod issue as plan issues; an unknown field is reported at its own path, with the field it may have meant. */
function shapeIssue(issue: z.core.$ZodIssue): PlanIssue[] {
  if (issue.code !== 'unrecognized_keys') return [{ path: formatPath(issue.path), message: issue.message }];
  return issue.keys.map((key) => {
    const close = (name: string) => name.toLowerCase() === key.toLowerCase() || (key.length > 3 && key.length < 40 && editDistance(name, key) <= 2);
    const at = formatPath([...issue.path, shorten(key, 40)]);
    // A real field in the wrong place (`egress` inside `sandbox`): suggesting its own name would not help.
    if (FIELD_NAMES.includes(key)) return { path: at, message: `"${key}" is not a field here (it is one of another part of the plan)` };
    const meant = FIELD_NAMES.find(close);
    return { path: at, message: `unknown field "${shorten(key)}"${meant ? ` (did you mean "${meant}"?)` : ''}` };
  });
}

function topLevelProblem(raw: unknown): PlanIssue | undefined {
  if (raw === null || raw === undefined) return { path: '', message: 'the plan is empty: a plan is a map with at least "name" and "steps"' };
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    return { path: '', message: `a plan is a map with at least "name" and "steps"; this holds ${Array.isArray(raw) ? 'a list' : `a ${typeof raw}`}` };
  }
  return undefined;
}

/** Values templates and JSON encoding walk (recursively, in workflows): bounded depth, plain JSON data. */
function valueIssues(plan: Record<string, unknown>): PlanIssue[] {
  const issues = [...jsonValueIssues(plan.output, 'output')];
  const inputs = plan.inputs;
  if (inputs !== null && typeof inputs === 'object') {
    for (const [name, spec] of Object.entries(inputs)) {
      if (spec !== null && typeof spec === 'object') issues.push(...jsonValueIssues((spec as InputSpec).default, `inputs.${name}.default`));
    }
  }
  rawSteps(plan).forEach((step, i) => {
    for (const field of [...TEMPLATED_FIELDS, 'forEach']) issues.push(...jsonValueIssues((step as Record<string, unknown>)[field], `steps[${i}].${field}`));
    const compensate = step.compensate as { with?: unknown } | undefined;
    if (compensate !== null && typeof compensate === 'object') issues.push(...jsonValueIssues(compensate.with, `steps[${i}].compensate.with`));
  });
  return issues;
}

/** Defaults are checked as the inputs they stand for: a `number` input's default is a number. */
function inputDefaultIssues(inputs: unknown): PlanIssue[] {
  if (inputs === null || typeof inputs !== 'object') return [];
  const issues: PlanIssue[] = [];
  for (const [name, spec] of Object.entries(inputs)) {
    if (spec === null || typeof spec !== 'object') continue;
    const { type = 'string', default: value } = spec as Partial<InputSpec>;
    if (value === undefined || !['string', 'number', 'boolean', 'json'].includes(type)) continue;
    const typed = typedInput(value, type, `inputs.${name}.default`);
    if (!typed.ok) issues.push(...typed.issues);
  }
  return issues;
}

/**
 * In a workspace cloned from a repository, a worktree is one of the clone (`repo: "."`), which any
 * host the run moves to can make again from its pushed branch: another repository is on one disk
 * only. A team's workers are steps like any other: each one's work is pushed when it ends.
 */
function clonedWorkspaceIssues(plan: CompiledPlan): PlanIssue[] {
  if (!plan.source) return [];
  return plan.steps.flatMap((step, index) =>
    step.worktree && step.worktree.repo !== CLONE_REPO
      ? [{ path: `steps[${index}].worktree.repo`, message: 'in a workspace cloned from a repository (workspace: { repo }), a worktree is one of the clone: give repo: "."' }]
      : [],
  );
}

/** Steps that share a worktree (same repo and task) must agree on what it starts from and when it goes. */
function worktreeSharingIssues(plan: CompiledPlan): PlanIssue[] {
  const first = new Map<string, { index: number; base?: string; cleanup: string }>();
  const issues: PlanIssue[] = [];
  plan.steps.forEach((step, index) => {
    if (!step.worktree) return;
    const key = `${step.worktree.repo}\0${step.worktree.task}`;
    const seen = first.get(key);
    if (!seen) first.set(key, { index, base: step.worktree.base, cleanup: step.worktree.cleanup });
    else if (seen.base !== step.worktree.base || seen.cleanup !== step.worktree.cleanup) {
      issues.push({ path: `steps[${index}].worktree`, message: `shares task "${step.worktree.task}" with steps[${seen.index}] but not its base and cleanup; give them the same, or another task` });
    }
  });
  return issues;
}

function rawSteps(raw: Record<string, unknown>): Partial<StepFile>[] {
  const steps = raw.steps;
  if (!Array.isArray(steps)) return [];
  return steps.slice(0, MAX_CHECKED_STEPS).map((s) => (s !== null && typeof s === 'object' && !Array.isArray(s) ? (s as Partial<StepFile>) : {}));
}

function rawInputs(raw: Record<string, unknown>): string[] {
  const inputs = raw.inputs;
  return inputs !== null && typeof inputs === 'object' ? Object.keys(inputs as object) : [];
}

function compile(plan: PlanFile, checker: PlanChecker, options: ValidateOptions): CompiledPlan {
  const defaults = plan.defaults ?? {};
  const steps: CompiledStep[] = plan.steps.map((step) => ({
    id: step.id,
    needs: checker.needs.get(step.id) ?? [],
    ...(step.when !== undefined && { when: step.when }),
    ...(step.forEach !== undefined && { forEach: step.forEach }),
    as: step.as ?? 'item',
    ...(step.concurrency !== undefined && { concurrency: step.concurrency }),
    ...(step.local !== undefined && { local: step.local }),
    ...(stepTimeout(step, defaults.timeout) !== undefined && { timeout: stepTimeout(step, defaults.timeout) }),
    retry: { ...defaults.retry, ...step.retry },
    onFailure: step.onFailure ?? defaults.onFailure ?? 'abort',
    onTimeout: step.onTimeout ?? defaults.onTimeout ?? 'abort',
    action: compileAction(step, options.baseDir),
    ...(step.compensate && { compensate: { tool: step.compensate.tool, with: step.compensate.with ?? {} } }),
    ...(step.worktree && {
      worktree: {
        // The clone's path is known only on the host that makes it (workflows/plan/worktrees.ts).
        repo: typeof plan.workspace === 'object' && step.worktree.repo === CLONE_REPO ? CLONE_REPO : path.resolve(options.baseDir, step.worktree.repo),
        task: step.worktree.task ?? step.id,
        ...(step.worktree.base !== undefined && { base: step.worktree.base }),
        cleanup: step.worktree.cleanup ?? 'onSuccess',
      },
    }),
  }));
  const inputs = Object.fromEntries(
    Object.entries(plan.inputs ?? {}).map(([name, spec]) => [name, { ...spec, type: spec.type ?? 'string' }]),
  );
  const sandbox = plan.sandbox === undefined && plan.egress === undefined ? undefined : { ...(plan.sandbox !== undefined && toSandboxSpec(plan.sandbox)), ...(plan.egress !== undefined && { egress: toEgressPolicy(plan.egress) }) };
  return {
    name: plan.name,
    ...(sandbox && { sandbox }),
    ...compileWorkspace(plan.workspace, options.baseDir),
    inputs,
    steps,
    ...(plan.output !== undefined && { output: plan.output }),
    ...(plan.budget && { budget: { warnAt: DEFAULT_WARN_AT, onBudget: 'ask' as const, ...plan.budget } }),
    ...(plan.team && {
      team: {
        ...TEAM_DEFAULTS,
        ...plan.team,
        ...(plan.team.model && { model: modelAt(plan.team.model, options.baseDir) }),
        ...(plan.team.fallbackModel && { fallbackModel: modelAt(plan.team.fallbackModel, options.baseDir) }),
      },
    }),
  };
}

/** A path, resolved where `cadre run` was called; a repository, its path resolved the same way (a URL stays as it is). */
function compileWorkspace(workspace: PlanFile['workspace'], baseDir: string): Pick<CompiledPlan, 'workspace' | 'source'> {
  if (typeof workspace !== 'object') return { workspace: path.resolve(baseDir, workspace ?? '.') };
  const repo = isRepositoryUrl(workspace.repo) ? workspace.repo : path.resolve(baseDir, workspace.repo);
  return { workspace: '', source: { repo, ...(workspace.ref !== undefined && { ref: workspace.ref }) } };
}

/** A team's agents spend through their subtasks and specialists too, which only the plan's ledger holds. */
function teamBudgetIssues(plan: CompiledPlan): PlanIssue[] {
  if (!plan.team) return [];
  return plan.steps.flatMap((step, index) =>
    step.action.kind === 'agent' && step.action.agent.budget ? [{ path: `steps[${index}].agent.budget`, message: "a team's agents share the plan's budget (a top-level `budget:`), which holds their subtasks and specialists too; an agent's own would not" }] : [],
  );
}

/** `scheme://…` or scp-like `user@host:path`: git fetches it; anything else is a path. */
export function isRepositoryUrl(repo: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(repo) || /^[^/:]+@[^/:]+:/.test(repo);
}

/** Asks wait for a human without limit unless they set their own timeout; plan defaults do not apply. */
function stepTimeout(step: StepFile, fallback: string | undefined): string | undefined {
  return step.ask ? (step.ask.timeout ?? step.timeout) : (step.timeout ?? fallback);
}
