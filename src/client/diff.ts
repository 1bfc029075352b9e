/**
 * `cadre diff <a> <b>` (docs/forks.md): two runs of a plan side by side, step by step, only what
 * differs: status, output (a JSON diff; a stored output is compared by its reference), attempts,
 * tokens, cost and time; and what each run spent itself (a fork's restored steps cost it nothing).
 * Each run's records are read by its `forkSource` query, which a worker answers by replaying it.
 */
import { formatMs } from '../plan-format/duration';
import type { StepRecord, StepStatus } from '../protocol/definitions';
import { type ForkSource, forkSourceQuery, isRestored } from '../protocol/forks';
import type { CompiledPlan } from '../plan-format/types';
import { type Pricing, costOf, formatUsd } from '../providers/prices';
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
  /** USD, where the step's model has a price (cadre.config.yaml `models.prices`). */
  cost?: [number | undefined, number | undefined];
  durationMs?: [number | undefined, number | undefined];
}

/** What a run's own model calls used: its steps' but those it restored from another run. */
export interface Spend {
  tokens: number;
  /** USD, of the steps whose model has a price. */
  cost: number;
  /** Models it used that have no price: their tokens are not in `cost`. */
  unpriced: string[];
}

export type { Pricing } from '../providers/prices';

export interface RunDiff {
  a: string;
  b: string;
  /** How many steps the two runs have between them. */
  steps: number;
  /** The steps that differ, in plan order. */
  differ: StepDiff[];
  spent: { a: Spend; b: Spend };
  /** A price table was given: costs are shown. */
  priced?: true;
}

/** Output changes a step's line shows; the rest are counted there, and `--json` has them all. */
const MAX_CHANGES = 20;
const QUERY_TIMEOUT_MS = 10_000;

export async function diffRuns(cadre: RunAccess, a: string, b: string, pricing: Pricing = { prices: {} }): Promise<RunDiff> {
  const [sa, sb] = await Promise.all([a, b].map((id) => sourceOf(cadre, id)));
  return { a, b, ...diffSources(sa, sb, pricing) };
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
export function diffSources(a: ForkSource, b: ForkSource, pricing: Pricing = { prices: {} }): Omit<RunDiff, 'a' | 'b'> {
  const recordsA = new Map(a.records.map((r) => [r.id, r]));
  const recordsB = new Map(b.records.map((r) => [r.id, r]));
  const ids = [...new Set([...a.plan.steps.map((s) => s.id), ...b.plan.steps.map((s) => s.id)])];
  const [costA, costB] = [a, b].map((source) => (record: StepRecord) => stepCost(record, modelOf(source, record.id, pricing), pricing));
  const priced = Object.keys(pricing.prices).length > 0;
  const differ = ids.flatMap((id) => {
    const ra = recordsA.get(id);
    const rb = recordsB.get(id);
    if (!ra || !rb) return [{ step: id, only: ra ? ('a' as const) : ('b' as const) }];
    const diff = stepDiff(id, ra, rb, a.outputs[id], b.outputs[id]);
    const [ca, cb] = [costA(ra), costB(rb)];
    // Without a price table there is no cost to show, only tokens.
    if (ca !== cb && priced) diff.cost = [ca, cb];
    return Object.keys(diff).length > 1 ? [diff] : [];
  });
  return { steps: ids.length, differ, spent: { a: spendOf(a, pricing), b: spendOf(b, pricing) }, ...(priced && { priced }) };
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

/** The model an agent or decide step names, or the default one; undefined for other steps. */
function modelOf(source: ForkSource, step: string, pricing: Pricing): string | undefined {
  const action = (source.plan as unknown as CompiledPlan).steps.find((s) => s.id === step)?.action;
  const named = action?.kind === 'agent' ? action.agent.model : action?.kind === 'decide' ? action.decide.model : undefined;
  return action?.kind === 'agent' || action?.kind === 'decide' ? (named ?? pricing.defaultModel) : undefined;
}

/** USD for the step's agent, when its model has a price; 0 for a step that used no model. */
function stepCost(record: StepRecord, model: string | undefined, pricing: Pricing): number | undefined {
  const usage = record.agent?.usage;
  if (!usage || usage.inputTokens + usage.outputTokens === 0) return 0;
  const price = model === undefined ? undefined : pricing.prices[model];
  return price && costOf(usage, price);
}

/** What the run's own steps used: a fork's restored steps were paid by the run they came from. */
function spendOf(source: ForkSource, pricing: Pricing): Spend {
  const spend: Spend = { tokens: 0, cost: 0, unpriced: [] };
  for (const record of source.records.filter((r) => !isRestored(r))) {
    spend.tokens += tokensOf(record);
    const model = modelOf(source, record.id, pricing);
    const cost = stepCost(record, model, pricing);
    if (cost !== undefined) spend.cost += cost;
    else if (!spend.unpriced.includes(model ?? '(no model named)')) spend.unpriced.push(model ?? '(no model named)');
  }
  return spend;
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
  const cost = (s: Spend) => (s.tokens === 0 || !diff.priced ? '' : s.unpriced.length === 0 ? ` (${formatUsd(s.cost)})` : s.cost > 0 ? ` (${formatUsd(s.cost)} and unpriced)` : ' (unpriced)');
  const spend = (s: Spend) => `${s.tokens} tokens${cost(s)}`;
  const unpriced = diff.priced ? [...new Set([...diff.spent.a.unpriced, ...diff.spent.b.unpriced])] : [];
  return [
    head,
    ...diff.differ.map((d) => `  ${d.step}: ${describe(d)}`),
    `  spent: ${spend(diff.spent.a)} → ${spend(diff.spent.b)}`,
    ...(unpriced.length > 0 ? [`  no price for ${unpriced.join(', ')} (cadre.config.yaml models.prices): not in the cost`] : []),
  ].join('\n');
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
  if (d.cost) parts.push(`cost ${d.cost.map((c) => (c === undefined ? '(unpriced)' : formatUsd(c))).join(' → ')}`);
  if (d.durationMs) parts.push(`time ${d.durationMs[0] === undefined ? '(none)' : formatMs(d.durationMs[0])} → ${d.durationMs[1] === undefined ? '(none)' : formatMs(d.durationMs[1])}`);
  return parts.join('; ');
}
