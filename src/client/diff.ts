/**
 * `cadre diff <a> <b>` (docs/forks.md): two runs of a plan side by side, step by step, only what
 * differs: status, output (a JSON diff; a stored output is compared by its reference), attempts,
 * tokens and time. Each run's records are read by its `forkSource` query, which a worker answers
 * by replaying the run.
 */
import { formatMs } from '../plan-format/duration';
import type { StepRecord, StepStatus } from '../protocol/definitions';
import { type ForkSource, forkSourceQuery } from '../protocol/forks';
import { CadreError } from '../errors/cadre-error';
import { type RunAccess, TimedOut, bounded, describeRun } from './run-diagnostics';

/** A value that differs at `path` (`$` the whole output, `$.a[0]` inside it); absent on the side that lacks it. */
export interface OutputChange {
  path: string;
  a?: unknown;
  b?: unknown;
}

export interface StepDiff {
  step: string;
  /** The step is in one run's plan only. */
  only?: 'a' | 'b';
  status?: [StepStatus | undefined, StepStatus | undefined];
  output?: OutputChange[];
  attempts?: [number, number];
  tokens?: [number, number];
  durationMs?: [number | undefined, number | undefined];
}

export interface RunDiff {
  a: string;
  b: string;
  /** How many steps the two runs have between them. */
  steps: number;
  /** The steps that differ, in plan order. */
  differ: StepDiff[];
}

/** Output changes a step's line shows; the rest are counted there, and `--json` has them all. */
const MAX_CHANGES = 20;
const QUERY_TIMEOUT_MS = 10_000;

export async function diffRuns(cadre: RunAccess, a: string, b: string): Promise<RunDiff> {
  const [sa, sb] = await Promise.all([a, b].map((id) => sourceOf(cadre, id)));
  const { steps, differ } = diffSources(sa, sb);
  return { a, b, steps, differ };
}

async function sourceOf(cadre: RunAccess, id: string): Promise<ForkSource> {
  const description = await describeRun(cadre, id);
  if (description.type !== 'runPlan') throw new CadreError(`${id} is a ${description.type} run: cadre diff compares plan runs`);
  try {
    return await bounded(cadre, QUERY_TIMEOUT_MS, () => cadre.client.workflow.getHandle(id).query(forkSourceQuery));
  } catch (err) {
    if (err instanceof TimedOut) throw new CadreError(`run ${id}: no worker answered in ${QUERY_TIMEOUT_MS / 1000} s; its records need a running cadre worker (task queue "${description.taskQueue}") to replay its history`);
    throw err;
  }
}

/** The steps of two runs that differ, in the order of `a`'s plan, then `b`'s own. Pure. */
export function diffSources(a: ForkSource, b: ForkSource): { steps: number; differ: StepDiff[] } {
  const recordsA = new Map(a.records.map((r) => [r.id, r]));
  const recordsB = new Map(b.records.map((r) => [r.id, r]));
  const ids = [...new Set([...a.plan.steps.map((s) => s.id), ...b.plan.steps.map((s) => s.id)])];
  const differ = ids.flatMap((id) => {
    const ra = recordsA.get(id);
    const rb = recordsB.get(id);
    if (!ra || !rb) return [{ step: id, only: ra ? ('a' as const) : ('b' as const) }];
    const diff = stepDiff(id, ra, rb, a.outputs[id], b.outputs[id]);
    return Object.keys(diff).length > 1 ? [diff] : [];
  });
  return { steps: ids.length, differ };
}

function stepDiff(step: string, ra: StepRecord, rb: StepRecord, oa: unknown, ob: unknown): StepDiff {
  const diff: StepDiff = { step };
  if (ra.status !== rb.status) diff.status = [ra.status, rb.status];
  const changes = jsonDiff(oa, ob);
  if (changes.length > 0) diff.output = changes;
  if (ra.attempts !== rb.attempts) diff.attempts = [ra.attempts, rb.attempts];
  const [ta, tb] = [tokensOf(ra), tokensOf(rb)];
  if (ta !== tb) diff.tokens = [ta, tb];
  if (ra.durationMs !== rb.durationMs) diff.durationMs = [ra.durationMs, rb.durationMs];
  return diff;
}

function tokensOf(record: StepRecord): number {
  const usage = record.agent?.usage;
  return usage ? usage.inputTokens + usage.outputTokens : 0;
}

/** Where two JSON values differ, deepest first found: objects by key, arrays by index. Pure. */
export function jsonDiff(a: unknown, b: unknown, path = '$'): OutputChange[] {
  if (Object.is(a, b)) return [];
  if (isObject(a) && isObject(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
    return keys.flatMap((key) => (Object.hasOwn(a, key) && Object.hasOwn(b, key) ? jsonDiff(a[key], b[key], `${path}.${key}`) : [side(`${path}.${key}`, a, b, key)]));
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    return Array.from({ length: Math.max(a.length, b.length) }, (_, i) => (i < a.length && i < b.length ? jsonDiff(a[i], b[i], `${path}[${i}]`) : [side(`${path}[${i}]`, a, b, i)])).flat();
  }
  return [{ path, ...(a !== undefined && { a }), ...(b !== undefined && { b }) }];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function side(path: string, a: unknown, b: unknown, key: string | number): OutputChange {
  const at = (value: unknown) => (value as Record<string | number, unknown>)[key];
  return { path, ...(Object.hasOwn(a as object, key) && { a: at(a) }), ...(Object.hasOwn(b as object, key) && { b: at(b) }) };
}

/** The diff as lines: one a step, what differs in it. */
export function renderDiff(diff: RunDiff): string {
  const head = `${diff.a} → ${diff.b}: ${diff.differ.length === 0 ? 'no step differs' : `${diff.differ.length} of ${diff.steps} steps differ`}`;
  return [head, ...diff.differ.map((d) => `  ${d.step}: ${describe(d)}`)].join('\n');
}

function describe(d: StepDiff): string {
  if (d.only) return `only in ${d.only === 'a' ? 'the first' : 'the second'} run's plan`;
  const show = (value: unknown) => (value === undefined ? '(none)' : JSON.stringify(value));
  const parts: string[] = [];
  if (d.status) parts.push(`status ${show(d.status[0])} → ${show(d.status[1])}`);
  const output = d.output ?? [];
  for (const change of output.slice(0, MAX_CHANGES)) parts.push(`output ${change.path}: ${show(change.a)} → ${show(change.b)}`);
  if (output.length > MAX_CHANGES) parts.push(`and ${output.length - MAX_CHANGES} more output changes (--json lists them all)`);
  if (d.attempts) parts.push(`attempts ${d.attempts[0]} → ${d.attempts[1]}`);
  if (d.tokens) parts.push(`tokens ${d.tokens[0]} → ${d.tokens[1]}`);
  if (d.durationMs) parts.push(`time ${d.durationMs[0] === undefined ? '(none)' : formatMs(d.durationMs[0])} → ${d.durationMs[1] === undefined ? '(none)' : formatMs(d.durationMs[1])}`);
  return parts.join('; ');
}
