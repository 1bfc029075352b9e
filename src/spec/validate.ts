/**
 * Validates a parsed plan and compiles it to plain data for the `runPlan` workflow.
 * Every problem is reported at once, each with its path (`steps[3].dependsOn[0]`).
 */
import path from 'node:path';
import type { z } from 'zod';
import { ExpressionError, namesIn } from './expressions';
import { planSchema, type PlanFile, type StepFile } from './schema';
import { TemplateError, isWholeTemplate, pathsInString, stringsIn } from './templates';
import { TOOL_NAMES, isToolName, toolParams } from './tools';
import type { CompiledPlan, CompiledStep } from './types';

export interface PlanIssue {
  path: string;
  message: string;
}

export type ValidationResult = { ok: true; plan: CompiledPlan } | { ok: false; issues: PlanIssue[] };

export interface ValidateOptions {
  /** Directory a relative `workspace` is resolved against (where `cadre run` was called). */
  baseDir: string;
}

export function formatPath(parts: readonly PropertyKey[]): string {
  return parts
    .map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`))
    .join('');
}

export function formatIssues(issues: PlanIssue[]): string {
  return issues.map((issue) => (issue.path ? `${issue.path}: ${issue.message}` : issue.message)).join('\n');
}

export function validatePlan(raw: unknown, options: ValidateOptions): ValidationResult {
  const parsed = planSchema.safeParse(raw);
  if (!parsed.success) {
    // Report shape errors together with the graph errors the raw data still allows us to find.
    const issues = parsed.error.issues.map((issue) => ({ path: formatPath(issue.path), message: issue.message }));
    const steps = rawSteps(raw);
    if (steps) issues.push(...new PlanChecker(steps, rawInputs(raw)).check());
    return { ok: false, issues: dedupe(issues) };
  }
  const plan = parsed.data;
  const checker = new PlanChecker(plan.steps, Object.keys(plan.inputs ?? {}));
  const issues = checker.check();
  issues.push(...checker.checkOutput(plan.output));
  if (issues.length > 0) return { ok: false, issues: dedupe(issues) };
  return { ok: true, plan: compile(plan, checker, options) };
}

function rawSteps(raw: unknown): Partial<StepFile>[] | undefined {
  if (raw === null || typeof raw !== 'object') return undefined;
  const steps = (raw as { steps?: unknown }).steps;
  if (!Array.isArray(steps)) return undefined;
  return steps.map((s) => (s !== null && typeof s === 'object' ? (s as Partial<StepFile>) : {}));
}

function rawInputs(raw: unknown): string[] {
  const inputs = (raw as { inputs?: unknown }).inputs;
  return inputs !== null && typeof inputs === 'object' ? Object.keys(inputs as object) : [];
}

/** Drops repeats and orders issues as they appear in the file: plan fields, then steps by index, then output. */
function dedupe(issues: PlanIssue[]): PlanIssue[] {
  const seen = new Set<string>();
  const unique = issues.filter((issue) => {
    const key = `${issue.path}\u0000${issue.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const rank = (issue: PlanIssue) => {
    const step = /^steps\[(\d+)\]/.exec(issue.path);
    if (step) return 1 + Number(step[1]);
    return issue.path.startsWith('output') ? Number.MAX_SAFE_INTEGER : 0;
  };
  return unique.map((issue, i) => ({ issue, i })).sort((a, b) => rank(a.issue) - rank(b.issue) || a.i - b.i).map(({ issue }) => issue);
}

const ROOTS_HELP = 'use steps.<id>, inputs.<name> or the loop variable';

class PlanChecker {
  readonly issues: PlanIssue[] = [];
  readonly index = new Map<string, number>();
  /** Steps each step waits for, in declaration order. */
  readonly needs = new Map<string, string[]>();

  constructor(
    private readonly steps: Partial<StepFile>[],
    private readonly inputs: string[],
  ) {
    steps.forEach((step, i) => {
      if (typeof step.id !== 'string') return;
      if (this.index.has(step.id)) this.issue([i, 'id'], `duplicate step id "${step.id}"`);
      else this.index.set(step.id, i);
    });
  }

  check(): PlanIssue[] {
    this.steps.forEach((step, i) => this.checkStep(step, i));
    this.checkCycles();
    this.steps.forEach((step, i) => this.checkCompensate(step, i));
    return this.issues;
  }

  checkOutput(output: unknown): PlanIssue[] {
    const before = this.issues.length;
    this.templateRefs(output, 'output', undefined, undefined);
    return this.issues.slice(before);
  }

  private issue(at: (string | number)[], message: string, absolute = false): void {
    this.issues.push({ path: absolute ? formatPath(at) : formatPath(['steps', ...at]), message });
  }

  private checkStep(step: Partial<StepFile>, i: number): void {
    const id = typeof step.id === 'string' ? step.id : undefined;
    const needs: string[] = [];
    const need = (dep: string) => {
      if (!needs.includes(dep)) needs.push(dep);
    };
    if (Array.isArray(step.dependsOn)) {
      step.dependsOn.forEach((dep, j) => {
        if (typeof dep !== 'string') return;
        if (!this.index.has(dep)) this.issue([i, 'dependsOn', j], `unknown step "${dep}"${this.suggest(dep)}`);
        else if (dep === id) this.issue([i, 'dependsOn', j], `step "${dep}" cannot depend on itself`);
        else need(dep);
      });
    }
    if (typeof step.tool === 'string') {
      if (!isToolName(step.tool)) {
        this.issue([i, 'tool'], `unknown tool "${step.tool}" (known tools: ${TOOL_NAMES.join(', ')})`);
      } else this.checkParams(step.tool, step.with, [i, 'with']);
    }
    const loopVar = step.forEach !== undefined ? (typeof step.as === 'string' ? step.as : 'item') : undefined;
    if (typeof step.forEach === 'string') {
      if (!isWholeTemplate(step.forEach.trim())) {
        this.issue([i, 'forEach'], 'forEach must be a list or one template such as "{{ steps.x.output.json.items }}"');
      } else this.templateRefs(step.forEach, `steps[${i}].forEach`, id, undefined).forEach(need);
    }
    for (const field of ['with', 'ask'] as const) {
      this.templateRefs(step[field], `steps[${i}].${field}`, id, loopVar).forEach(need);
    }
    if (typeof step.when === 'string') this.expressionRefs(step.when, i, id, loopVar).forEach(need);
    if (id) this.needs.set(id, needs);
  }

  private checkParams(tool: keyof typeof toolParams, params: unknown, at: (string | number)[]): void {
    if (params !== undefined && (params === null || typeof params !== 'object')) return;
    // Templated values are only known at run time: check everything else now.
    const templated = new Set<string>();
    for (const { text, location } of stringsIn(params ?? {}, '')) {
      if (text.includes('{{')) templated.add(location.replace(/^\./, ''));
    }
    const result = (toolParams[tool] as z.ZodType).safeParse(params ?? {});
    if (result.success) return;
    for (const issue of result.error.issues) {
      const where = formatPath(issue.path);
      if ([...templated].some((t) => t === where || where.startsWith(`${t}.`) || where.startsWith(`${t}[`))) continue;
      if (issue.code === 'invalid_type' && templated.has(where)) continue;
      this.issue([...at, ...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))], issue.message);
    }
  }

  /** Checks the templates in a value and returns the steps they read. */
  private templateRefs(value: unknown, location: string, self: string | undefined, loopVar: string | undefined): string[] {
    return this.templateRefsAt(value, location, self, loopVar).map((r) => r.step);
  }

  private templateRefsAt(value: unknown, location: string, self: string | undefined, loopVar: string | undefined) {
    const refs: { step: string; location: string }[] = [];
    for (const { text, location: where } of stringsIn(value, location)) {
      if (!text.includes('{{')) continue;
      try {
        for (const p of pathsInString(text)) {
          const first = p.segments[0];
          const ref = this.reference(p.root, first && 'key' in first ? first.key : undefined, self, loopVar);
          if (typeof ref === 'string' && ref.startsWith('!')) this.issues.push({ path: where, message: ref.slice(1) });
          else if (ref) refs.push({ step: ref, location: where });
        }
      } catch (err) {
        if (!(err instanceof TemplateError)) throw err;
        this.issues.push({ path: where, message: err.message });
      }
    }
    return refs;
  }

  private expressionRefs(expression: string, i: number, self: string | undefined, loopVar: string | undefined): string[] {
    const refs: string[] = [];
    try {
      for (const chain of namesIn(expression)) {
        const ref = this.reference(chain[0], chain[1], self, loopVar);
        if (typeof ref === 'string' && ref.startsWith('!')) this.issue([i, 'when'], ref.slice(1));
        else if (ref) refs.push(ref);
      }
    } catch (err) {
      if (!(err instanceof ExpressionError)) throw err;
      this.issue([i, 'when'], err.message);
    }
    return refs;
  }

  /** The step a name refers to, undefined for inputs and loop variables, or "!message" when wrong. */
  private reference(root: string, next: string | undefined, self: string | undefined, loopVar: string | undefined) {
    if (root === loopVar || (loopVar !== undefined && root === 'index')) return undefined;
    if (root === 'inputs') {
      if (next === undefined) return '!templates read one input at a time: inputs.<name>';
      return this.inputs.includes(next) ? undefined : `!unknown input "${next}"`;
    }
    if (root !== 'steps') return `!unknown name "${root}" (${ROOTS_HELP})`;
    if (next === undefined) return '!templates read one step at a time: steps.<id>.output';
    if (!this.index.has(next)) return `!unknown step "${next}"${this.suggest(next)}`;
    if (next === self) return `!step "${next}" cannot read its own output`;
    return next;
  }

  private suggest(name: string): string {
    const limit = Math.max(1, Math.floor(name.length / 3));
    const close = [...this.index.keys()].find((id) => editDistance(id, name) <= limit);
    return close ? ` (did you mean "${close}"?)` : '';
  }

  private checkCycles(): void {
    const state = new Map<string, 'visiting' | 'done'>();
    const stack: string[] = [];
    const reported = new Set<string>();
    const visit = (id: string): void => {
      state.set(id, 'visiting');
      stack.push(id);
      for (const dep of this.needs.get(id) ?? []) {
        if (state.get(dep) === 'visiting') {
          const cycle = [...stack.slice(stack.indexOf(dep)), dep].reverse();
          const key = [...cycle.slice(0, -1)].sort().join(',');
          if (!reported.has(key)) {
            reported.add(key);
            this.issue([this.index.get(cycle[0]) ?? 0], `dependency cycle ${cycle.join(' -> ')}`);
          }
        } else if (!state.has(dep)) visit(dep);
      }
      stack.pop();
      state.set(id, 'done');
    };
    for (const id of this.index.keys()) if (!state.has(id)) visit(id);
  }

  upstreamOf(id: string): Set<string> {
    const seen = new Set<string>();
    const todo = [...(this.needs.get(id) ?? [])];
    while (todo.length > 0) {
      const dep = todo.pop() as string;
      if (seen.has(dep)) continue;
      seen.add(dep);
      todo.push(...(this.needs.get(dep) ?? []));
    }
    return seen;
  }

  /** A compensation runs after its step, so it may read that step and what ran before it. */
  private checkCompensate(step: Partial<StepFile>, i: number): void {
    const compensate = step.compensate;
    if (!compensate || typeof compensate !== 'object' || typeof step.id !== 'string') return;
    if (typeof compensate.tool === 'string') {
      if (!isToolName(compensate.tool)) {
        this.issue([i, 'compensate', 'tool'], `unknown tool "${compensate.tool}" (known tools: ${TOOL_NAMES.join(', ')})`);
      } else this.checkParams(compensate.tool, compensate.with, [i, 'compensate', 'with']);
    }
    const upstream = this.upstreamOf(step.id);
    upstream.add(step.id);
    for (const ref of this.templateRefsAt(compensate.with, `steps[${i}].compensate.with`, undefined, undefined)) {
      if (!upstream.has(ref.step)) {
        this.issues.push({ path: ref.location, message: `template reads step "${ref.step}", which is not upstream of "${step.id}"` });
      }
    }
  }
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return row[b.length];
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
    action: step.ask ? { kind: 'ask', ask: step.ask } : { kind: 'tool', tool: step.tool as string, with: step.with ?? {} },
    ...(step.compensate && { compensate: { tool: step.compensate.tool, with: step.compensate.with ?? {} } }),
  }));
  const inputs = Object.fromEntries(
    Object.entries(plan.inputs ?? {}).map(([name, spec]) => [name, { ...spec, type: spec.type ?? 'string' }]),
  );
  return {
    name: plan.name,
    workspace: path.resolve(options.baseDir, plan.workspace ?? '.'),
    inputs,
    steps,
    ...(plan.output !== undefined && { output: plan.output }),
  };
}

/** Asks wait for a human without limit unless they set their own timeout; plan defaults do not apply. */
function stepTimeout(step: StepFile, fallback: string | undefined): string | undefined {
  return step.ask ? (step.ask.timeout ?? step.timeout) : (step.timeout ?? fallback);
}
