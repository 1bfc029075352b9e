/**
 * The semantic checks of a plan that need more than its shape: dependencies, cycles, templates
 * and `when` expressions, and what each step waits for. Works on raw data too (fields of the
 * wrong type are skipped), so graph problems are reported together with shape problems.
 */
import type { z } from 'zod';
import { ExpressionError, namesIn } from './expressions';
import { findCycles, upstreamOf } from './graph';
import { type PlanIssue, formatPath } from './issues';
import { MAX_STEP_ID_LENGTH, MAX_TEMPLATE_LENGTH } from './limits';
import type { StepFile } from './schema';
import { TEMPLATED_FIELDS } from './kinds';
import { TemplateError, isWholeTemplate, pathsInString, stringsIn } from './templates';
import { shorten } from './text';
import { CUSTOM_TOOL, TOOL_NAMES, isToolName, toolParams } from './tools';

const ROOTS_HELP = 'use steps.<id>, inputs.<name> or the loop variable';
/** Suggestions compare names pairwise: bound the work a plan full of typos can cause. */
const MAX_SUGGESTIONS = 100;
/** Cycles longer than this are named by their ends. */
const CYCLE_SHOWN = 12;

/** Where validation is, so an unexpected failure can say so. */
export interface Progress {
  stage: string;
  path: string;
}

export class PlanChecker {
  readonly issues: PlanIssue[] = [];
  readonly index = new Map<string, number>();
  /** Steps each step waits for, in declaration order. */
  readonly needs = new Map<string, string[]>();
  private suggestions = 0;
  private readonly inputs: Set<string>;

  constructor(
    private readonly steps: Partial<StepFile>[],
    inputs: string[],
    private readonly progress: Progress,
  ) {
    this.inputs = new Set(inputs);
    steps.forEach((step, i) => {
      if (typeof step.id !== 'string') return;
      if (this.index.has(step.id)) this.issue([i, 'id'], `duplicate step id "${shorten(step.id)}"`);
      else this.index.set(step.id, i);
    });
  }

  check(): PlanIssue[] {
    this.progress.stage = 'checking steps';
    this.steps.forEach((step, i) => this.checkStep(step, i));
    this.progress.path = 'steps';
    this.checkCycles();
    this.steps.forEach((step, i) => this.checkCompensate(step, i));
    return this.issues;
  }

  checkOutput(output: unknown): PlanIssue[] {
    const before = this.issues.length;
    this.progress.stage = 'checking the output';
    this.progress.path = 'output';
    this.templateRefs(output, 'output', undefined, undefined);
    return this.issues.slice(before);
  }

  private issue(at: (string | number)[], message: string): void {
    this.issues.push({ path: formatPath(['steps', ...at]), message });
  }

  private checkStep(step: Partial<StepFile>, i: number): void {
    this.progress.path = `steps[${i}]`;
    const id = typeof step.id === 'string' ? step.id : undefined;
    const needs = new Set<string>();
    const need = (dep: string) => needs.add(dep);
    if (Array.isArray(step.dependsOn)) {
      step.dependsOn.forEach((dep, j) => {
        if (typeof dep !== 'string') return;
        if (!this.index.has(dep)) this.issue([i, 'dependsOn', j], `unknown step "${shorten(dep)}"${this.suggest(dep)}`);
        else if (dep === id) this.issue([i, 'dependsOn', j], `step "${dep}" cannot depend on itself`);
        else need(dep);
      });
    }
    // The worker's own tools (ts:, mcp:) are known only to workers: their parameters are checked when they run.
    if (typeof step.tool === 'string' && step.tool.endsWith('/*')) this.issue([i, 'tool'], 'a step calls one tool: name it, as in mcp:<server>/<tool>');
    else if (typeof step.tool === 'string' && !CUSTOM_TOOL.test(step.tool)) {
      if (!isToolName(step.tool)) {
        this.issue([i, 'tool'], `unknown tool "${shorten(step.tool)}" (known tools: ${TOOL_NAMES.join(', ')}; the worker's own: ts:<name>, mcp:<server>/<tool>)`);
      } else this.checkParams(step.tool, step.with, [i, 'with']);
    }
    const loopVar = step.forEach !== undefined ? (typeof step.as === 'string' ? step.as : 'item') : undefined;
    if (typeof step.forEach === 'string') {
      this.progress.path = `steps[${i}].forEach`;
      if (!isWholeTemplate(step.forEach.trim())) {
        this.issue([i, 'forEach'], 'forEach must be a list or one template such as "{{ steps.x.output.json.items }}"');
      } else this.templateRefs(step.forEach, `steps[${i}].forEach`, id, undefined).forEach(need);
    }
    if (step.agent !== null && typeof step.agent === 'object') this.checkAgent(step.agent, i);
    for (const field of TEMPLATED_FIELDS) {
      this.progress.path = `steps[${i}].${field}`;
      this.templateRefs((step as Record<string, unknown>)[field], `steps[${i}].${field}`, id, loopVar).forEach(need);
    }
    if (typeof step.when === 'string') {
      this.progress.path = `steps[${i}].when`;
      this.expressionRefs(step.when, i, id, loopVar).forEach(need);
    }
    if (id) this.needs.set(id, [...needs]);
  }

  /** An agent's tools are built-in tools; its approvals name tools it has. */
  private checkAgent(agent: Partial<NonNullable<StepFile['agent']>>, i: number): void {
    const tools = Array.isArray(agent.tools) ? agent.tools : [];
    tools.forEach((tool, j) => {
      if (typeof tool === 'string' && !isToolName(tool) && !CUSTOM_TOOL.test(tool)) {
        this.issue([i, 'agent', 'tools', j], `unknown tool "${shorten(tool)}" (known tools: ${TOOL_NAMES.join(', ')}; the worker's own: ts:<name>, mcp:<server>/<tool>, mcp:<server>/*)`);
      }
    });
    const approvals = agent.approvals;
    if (approvals === null || typeof approvals !== 'object') return;
    for (const [tool, policy] of Object.entries(approvals)) {
      const server = /^mcp:[^/]+\//.exec(tool)?.[0];
      if (!tools.includes(tool) && !(server && tools.includes(`${server}*`))) this.issue([i, 'agent', 'approvals', tool], `"${shorten(tool)}" is not one of the agent's tools (${tools.join(', ') || 'none'})`);
      else if (typeof policy === 'object' && tool !== 'shell') this.issue([i, 'agent', 'approvals', tool], 'only shell takes command rules; other tools take allow, deny or ask');
    }
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
      const unsafe = unparseableTemplate(text);
      if (unsafe) {
        this.issues.push({ path: where, message: unsafe });
        continue;
      }
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
      return this.inputs.has(next) ? undefined : `!unknown input "${shorten(next)}"`;
    }
    if (root !== 'steps') return `!unknown name "${shorten(root)}" (${ROOTS_HELP})`;
    if (next === undefined) return '!templates read one step at a time: steps.<id>.output';
    if (!this.index.has(next)) return `!unknown step "${shorten(next)}"${this.suggest(next)}`;
    if (next === self) return `!step "${next}" cannot read its own output`;
    return next;
  }

  private suggest(name: string): string {
    if (name.length > MAX_STEP_ID_LENGTH || this.suggestions >= MAX_SUGGESTIONS) return '';
    this.suggestions++;
    const limit = Math.max(1, Math.floor(name.length / 3));
    for (const id of this.index.keys()) {
      if (Math.abs(id.length - name.length) <= limit && editDistance(id, name) <= limit) return ` (did you mean "${id}"?)`;
    }
    return '';
  }

  private checkCycles(): void {
    for (const cycle of findCycles(this.index.keys(), this.needs)) {
      this.issue([this.index.get(cycle[0]) ?? 0], `dependency cycle ${describeCycle(cycle)}`);
    }
  }

  /** A compensation runs after its step, so it may read that step and what ran before it. */
  private checkCompensate(step: Partial<StepFile>, i: number): void {
    const compensate = step.compensate;
    if (!compensate || typeof compensate !== 'object' || typeof step.id !== 'string') return;
    this.progress.path = `steps[${i}].compensate`;
    if (typeof compensate.tool === 'string' && !CUSTOM_TOOL.test(compensate.tool)) {
      if (!isToolName(compensate.tool)) {
        this.issue([i, 'compensate', 'tool'], `unknown tool "${shorten(compensate.tool)}" (known tools: ${TOOL_NAMES.join(', ')})`);
      } else this.checkParams(compensate.tool, compensate.with, [i, 'compensate', 'with']);
    }
    const refs = this.templateRefsAt(compensate.with, `steps[${i}].compensate.with`, undefined, undefined);
    if (refs.length === 0) return;
    const upstream = upstreamOf(step.id, this.needs);
    upstream.add(step.id);
    for (const ref of refs) {
      if (!upstream.has(ref.step)) {
        this.issues.push({ path: ref.location, message: `template reads step "${ref.step}", which is not upstream of "${step.id}"` });
      }
    }
  }
}

/**
 * Why a string's templates cannot be parsed safely, if they cannot: an unclosed `{{`, or a
 * template too long (parsing and resolving templates costs time that grows with their length).
 */
function unparseableTemplate(text: string): string | undefined {
  for (let start = text.indexOf('{{'); start !== -1; ) {
    const end = text.indexOf('}}', start + 2);
    if (end === -1) return `bad template in "${shorten(text)}": "{{" without "}}"`;
    if (end - start - 2 > MAX_TEMPLATE_LENGTH) {
      return `template "${shorten(text.slice(start, end + 2))}" is longer than ${MAX_TEMPLATE_LENGTH} characters: a template is a path such as {{ steps.x.output.json }}`;
    }
    start = text.indexOf('{{', end + 2);
  }
  return undefined;
}

function describeCycle(cycle: string[]): string {
  if (cycle.length <= CYCLE_SHOWN) return cycle.join(' -> ');
  const half = CYCLE_SHOWN / 2;
  return `${[...cycle.slice(0, half), '…', ...cycle.slice(-half)].join(' -> ')} (${(cycle.length - 1).toLocaleString('en-US')} steps)`;
}

export function editDistance(a: string, b: string): number {
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
