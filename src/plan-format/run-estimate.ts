/**
 * What a run of a plan costs Temporal, estimated before it starts: history events and bytes
 * (the server warns, then terminates runs, past its limits) and how many activities can be
 * running at once (past Temporal's pending-activity limit, scheduling fails).
 *
 * The estimate counts what the plan says: steps, literal forEach items, literal parameters,
 * the start payload. Step outputs and lists that come from templates are not known before
 * the run; each output adds its size, at most BLOB_THRESHOLD_BYTES (larger ones are stored
 * outside the history).
 */
import { levels } from './graph';
import { actionCost } from './kinds';
import type { PlanIssue } from './issues';
import {
  DEFAULT_FOREACH_CONCURRENCY,
  FOREACH_CHILD_THRESHOLD,
  HISTORY_BYTES_LIMIT,
  HISTORY_BYTES_WARN,
  HISTORY_EVENTS_LIMIT,
  HISTORY_EVENTS_WARN,
  MAX_PENDING_ACTIVITIES,
  utf8Length,
} from './limits';
import { formatBytes, formatCount } from './text';
import type { CompiledPlan, CompiledStep } from './types';

/**
 * Events and bytes per unit of work, from recorded runPlan histories (test/histories): an
 * activity is scheduled, started and completed, and the workflow task reacting to it adds
 * three more events; about 1 KB of ids, timestamps and options besides its input.
 */
const COST = {
  run: { events: 10, bytes: 3000 },
  activity: { events: 6, bytes: 1000 },
  timer: { events: 5, bytes: 500 },
  // An update accepted and completed, status changes, an optional timer, a workflow task.
  ask: { events: 9, bytes: 1500 },
  // A child workflow started and completed, and the workflow task reacting to it.
  child: { events: 6, bytes: 1500 },
};
/** Past this share of a hard limit, a warning says the run may be terminated. */
const NEAR_LIMIT = 0.8;
/** A step that makes up this share of the total is named as the cause. */
const STANDS_OUT = 0.25;

interface Cost {
  events: number;
  bytes: number;
}

interface StepCost extends Cost {
  path: string;
  /** Histories of the child workflows this step runs a large forEach in, each. */
  child?: Cost;
}

/** Warnings when a run would pass Temporal's history thresholds, at the steps that cost most. */
export function historyWarnings(plan: CompiledPlan, startPayloadBytes: number): PlanIssue[] {
  const steps = plan.steps.map((step, i) => stepCost(plan, step, i));
  const total = {
    events: COST.run.events + sum(steps, (s) => s.events),
    bytes: COST.run.bytes + startPayloadBytes + sum(steps, (s) => s.bytes),
  };
  const warnings: PlanIssue[] = [];
  /** The step that costs most, or all steps when none stands out. */
  const culprit = (key: keyof Cost, format: (n: number) => string) => {
    const step = steps.reduce((a, b) => (b[key] > a[key] ? b : a), steps[0]);
    if (step[key] >= total[key] * STANDS_OUT) return { path: step.path, what: `this step about ${format(step[key])}` };
    return { path: 'steps', what: `${formatCount(steps.length)} steps, none much bigger than the others` };
  };
  const eventsWarning = threshold(total.events, HISTORY_EVENTS_WARN, HISTORY_EVENTS_LIMIT, formatCount, 'events');
  if (eventsWarning) {
    const { path, what } = culprit('events', formatCount);
    warnings.push({ path, message: `a run's history would hold about ${formatCount(total.events)} events (${what}), ${eventsWarning}` });
  }
  const bytesWarning = threshold(total.bytes, HISTORY_BYTES_WARN, HISTORY_BYTES_LIMIT, formatBytes, 'of history');
  if (bytesWarning) {
    const { path, what } = culprit('bytes', formatBytes);
    warnings.push({ path, message: `a run's history would hold about ${formatBytes(total.bytes)} before step outputs (${what}), ${bytesWarning}` });
  }
  for (const step of steps) {
    if (!step.child) continue;
    const events = threshold(step.child.events, HISTORY_EVENTS_WARN, HISTORY_EVENTS_LIMIT, formatCount, 'events');
    const bytes = threshold(step.child.bytes, HISTORY_BYTES_WARN, HISTORY_BYTES_LIMIT, formatBytes, 'of history');
    if (events || bytes) {
      warnings.push({
        path: step.path,
        message: `each child workflow of this loop (${formatCount(FOREACH_CHILD_THRESHOLD)} items) would hold about ${formatCount(step.child.events)} events and ${formatBytes(step.child.bytes)}, ${events ?? bytes}`,
      });
    }
  }
  return warnings;
}

function threshold(value: number, warn: number, limit: number, format: (n: number) => string, unit: string): string | undefined {
  if (value > limit * NEAR_LIMIT) {
    return `${value > limit ? 'past' : 'close to'} Temporal's limit of ${format(limit)} ${unit}, where the server terminates the run: split the plan, or loop over fewer items`;
  }
  if (value > warn) return `past Temporal's warning threshold of ${format(warn)} ${unit} (the server terminates runs at ${format(limit)})`;
  return undefined;
}

function stepCost(plan: CompiledPlan, step: CompiledStep, i: number): StepCost {
  const path = `steps[${i}]`;
  // A compensation runs when the run aborts after this step completed: count the worst case.
  const undo = step.compensate ? activityCost(plan, step.compensate.with, step) : { events: 0, bytes: 0 };
  const cost = actionCost(step.action);
  if (cost.unit === 'ask') return { path, events: COST.ask.events, bytes: COST.ask.bytes + jsonBytes(cost.input) };
  if (cost.unit === 'inline') return { path, events: 0, bytes: jsonBytes(cost.value) };
  const unit = cost.unit === 'timer' ? COST.timer : cost.unit === 'activity' ? activityCost(plan, cost.params, step) : { events: COST.child.events, bytes: COST.child.bytes + jsonBytes(cost.input) };
  if (!Array.isArray(step.forEach)) return { path, events: unit.events + undo.events, bytes: unit.bytes + undo.bytes };
  const items = step.forEach;
  const itemsBytes = jsonBytes(items);
  const loop = { events: unit.events * items.length, bytes: unit.bytes * items.length + itemsBytes };
  if (items.length <= FOREACH_CHILD_THRESHOLD) {
    return { path: `${path}.forEach`, events: loop.events + undo.events, bytes: loop.bytes + undo.bytes };
  }
  // Large loops run in child workflows of FOREACH_CHILD_THRESHOLD items each: the parent sees one child per chunk.
  const chunks = Math.ceil(items.length / FOREACH_CHILD_THRESHOLD);
  const chunkBytes = (itemsBytes / items.length) * FOREACH_CHILD_THRESHOLD + jsonBytes({ ...step, forEach: undefined });
  return {
    path: `${path}.forEach`,
    events: COST.child.events * chunks + undo.events,
    bytes: (COST.child.bytes + chunkBytes) * chunks + undo.bytes,
    child: {
      events: COST.run.events + unit.events * FOREACH_CHILD_THRESHOLD,
      bytes: COST.run.bytes + chunkBytes + (loop.bytes / items.length) * FOREACH_CHILD_THRESHOLD,
    },
  };
}

/** One activity: its fixed cost plus its input (literal parameters, workspace, retry policy). */
function activityCost(plan: CompiledPlan, params: unknown, step: CompiledStep): Cost {
  return { events: COST.activity.events, bytes: COST.activity.bytes + jsonBytes(params) + utf8Length(plan.workspace) + jsonBytes(step.retry) };
}

/**
 * A problem when more activities could be running at once than Temporal allows: steps on one
 * level of the graph never wait for each other, so all of them can be running together.
 */
export function parallelismIssue(plan: CompiledPlan): PlanIssue | undefined {
  const needs = new Map(plan.steps.map((s) => [s.id, s.needs]));
  const level = levels(plan.steps.map((s) => s.id), needs);
  if (!level) return undefined;
  const byLevel = new Map<number, { running: number; steps: number[] }>();
  plan.steps.forEach((step, i) => {
    const at = level.get(step.id) ?? 0;
    const entry = byLevel.get(at) ?? { running: 0, steps: [] };
    entry.running += activitiesAtOnce(step);
    entry.steps.push(i);
    byLevel.set(at, entry);
  });
  for (const { running, steps } of byLevel.values()) {
    if (running <= MAX_PENDING_ACTIVITIES) continue;
    const names = steps.slice(0, 3).map((i) => plan.steps[i].id);
    const more = steps.length > names.length ? ` and ${formatCount(steps.length - names.length)} more` : '';
    return {
      path: `steps[${steps[0]}]`,
      message:
        `up to ${formatCount(running)} tools could be running at once (${names.join(', ')}${more} wait for nothing from each other); ` +
        `Temporal allows ${formatCount(MAX_PENDING_ACTIVITIES)} per run: add dependsOn between them, or lower forEach concurrency`,
    };
  }
  return undefined;
}

function activitiesAtOnce(step: CompiledStep): number {
  if (step.action.kind !== 'tool' || step.action.tool === 'sleep') return 0;
  if (step.forEach === undefined) return 1;
  const width = step.concurrency ?? DEFAULT_FOREACH_CONCURRENCY;
  return Array.isArray(step.forEach) ? Math.min(width, step.forEach.length) : width;
}

function jsonBytes(value: unknown): number {
  return value === undefined ? 0 : utf8Length(JSON.stringify(value));
}

function sum<T>(items: T[], of: (item: T) => number): number {
  return items.reduce((total, item) => total + of(item), 0);
}
