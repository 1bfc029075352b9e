/**
 * Scale: a forEach of 100,000 items runs to completion, chunked into child workflows of
 * FOREACH_CHILD_THRESHOLD items (foreach-chunks.ts, run-items.ts), after runs of 1,000 and 10,000
 * items for the curve. Each item is a no-op tool call (`fs.read` of a tiny file, a local activity as
 * cadre runs `fs.*`), 50 at once; the list is a shell step's output (a stored list).
 *
 *   npm run bench:scale                 (all three scale benchmarks at full size)
 *   node dist/bench/scale-foreach.js    (this one; CADRE_BENCH=smoke for a few seconds' sizes)
 *
 * Reports per size: wall time, time per item, the histories (how many, the largest, events per
 * item), the worker process's peak RSS while it ran; and the item throughput over the largest run,
 * from the chunks' histories. Writes bench/results/scale-foreach.json, a plot of time per item by
 * size (scale-foreach.svg) and of throughput over the largest run (scale-foreach-progress.svg).
 * Exits 1 when a run does not complete or a history reaches 20,000 events.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { temporal } from '@temporalio/proto';
import { FOREACH_CHILD_THRESHOLD } from '../src/plan-format/limits';
import { formatIssues, validatePlan } from '../src/plan-format/validate';
import type { CompiledPlan } from '../src/plan-format/types';
import { runHistories } from '../test/support/history';
import { type Plots, lines } from './plot';
import { analyticsSettled, runMain } from './run-main';
import { type ScaleEnv, type WorkerProcess, lostWorkflowTasks, runScaleBench, scratch, withWorkerProcesses } from './scale-env';
import { eventMs, mean, processCpuSeconds, round, timestampMs } from './stats';

export const FULL_SIZES = [1_000, 10_000, 100_000];
export const SMOKE_SIZES = [200, 1_200];
const CONCURRENCY = 50;
/** The issue's bound for any one history (Temporal's hard limit is 51,200 events). */
const MAX_EVENTS = 20_000;
/** Windows the largest run's throughput is measured over. */
const WINDOWS = 40;

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;

function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

function loopPlan(items: number, workspace: string): CompiledPlan {
  writeFileSync(path.join(workspace, 'noop.txt'), 'ok');
  writeFileSync(path.join(workspace, 'list.js'), `process.stdout.write(JSON.stringify(Array.from({ length: ${items} }, (_, i) => i)));`);
  const result = validatePlan(
    {
      name: `bench-foreach-${items}`,
      steps: [
        { id: 'list', tool: 'shell', with: { command: 'node list.js' } },
        { id: 'loop', forEach: '{{ steps.list.output.json }}', concurrency: CONCURRENCY, tool: 'fs.read', with: { path: 'noop.txt' } },
      ],
      output: { last: `{{ steps.loop.output[${items - 1}].content }}` },
    },
    { baseDir: workspace },
  );
  if (!result.ok) throw new Error(formatIssues(result.issues));
  return result.plan;
}

export interface ForEachRun {
  items: number;
  status: string;
  wallMs: number;
  msPerItem: number;
  histories: number;
  parentEvents: number;
  largestEvents: number;
  totalEvents: number;
  eventsPerItem: number;
  workerPeakRssMb: number;
  /** Workflow tasks of the run and its chunks that timed out or failed (their local activities ran again). */
  lostWorkflowTasks: { timedOut: number; failed: number };
  /** CPU seconds over the run: the worker process's and the server's; and the worker's per item. */
  cpuSeconds: { worker: number; server?: number };
  workerCpuMsPerItem: number;
  /** Items completed per second in WINDOWS equal slices of the run (from the items' markers), and how many items were counted. */
  throughput: { atSeconds: number; itemsPerSecond: number }[];
  itemsCounted: number;
}

interface LocalActivityMarker {
  activity_type?: string;
  complete_time?: { seconds: number; nanos: number } | null;
}

/** A local activity's marker data (the SDK core's JSON: its activity type, when it completed on the worker). */
function markerData(event: HistoryEvent): LocalActivityMarker | undefined {
  const attributes = event.markerRecordedEventAttributes;
  if (attributes?.markerName !== 'core_local_activity') return undefined;
  const data = attributes.details?.data?.payloads?.[0]?.data;
  if (!data) return undefined;
  try {
    return JSON.parse(Buffer.from(data).toString('utf8')) as LocalActivityMarker;
  } catch {
    return undefined;
  }
}

/**
 * When each item's tool call completed, across the run and its chunks: the time its local activity
 * completed in the worker, from its marker (the marker's own event time is when its chunk's workflow
 * task completed, up to 24 s later, many items at once).
 */
function itemTimes(histories: HistoryEvent[][]): number[] {
  const times: number[] = [];
  for (const events of histories) {
    for (const event of events) {
      if (event.eventType !== EventType.EVENT_TYPE_MARKER_RECORDED) continue;
      const marker = markerData(event);
      if (marker?.activity_type !== 'runTool') continue;
      const done = marker.complete_time;
      times.push(done ? timestampMs(done) : eventMs(event));
    }
  }
  return times.sort((a, b) => a - b);
}

function throughput(startMs: number, endMs: number, times: number[]): ForEachRun['throughput'] {
  const width = (endMs - startMs) / WINDOWS;
  const counts = new Array<number>(WINDOWS).fill(0);
  for (const t of times) counts[Math.min(WINDOWS - 1, Math.max(0, Math.floor((t - startMs) / width)))]++;
  return counts.map((count, i) => ({ atSeconds: round(((i + 0.5) * width) / 1000, 1), itemsPerSecond: round(count / (width / 1000), 0) }));
}

async function runOnce(env: ScaleEnv, items: number, taskQueue: string, rss: { peak: number }, worker: WorkerProcess): Promise<ForEachRun> {
  const plan = loopPlan(items, scratch(env, `foreach-${items}`));
  const workflowId = `bench-foreach-${items}-${Date.now().toString(36)}`;
  rss.peak = 0;
  const workerCpu0 = await worker.cpuSeconds();
  const serverCpu0 = processCpuSeconds(env.serverPid);
  const t0 = performance.now();
  await env.client.start(plan, {}, { workflowId, taskQueue });
  const d = await env.client.result(workflowId, { readStored: false });
  const wallMs = performance.now() - t0;
  const workerCpu = (await worker.cpuSeconds()) - workerCpu0;
  const serverCpu1 = processCpuSeconds(env.serverPid);
  const workerPeakRssMb = rss.peak;
  const all = [...(await runHistories(env.client.client, workflowId)).values()];
  const counts = all.map((events) => events.length);
  const totalEvents = counts.reduce((a, b) => a + b, 0);
  const times = itemTimes(all);
  const started = eventMs(all[0][0]);
  const closed = eventMs(all[0].at(-1)!);
  const run: ForEachRun = {
    items,
    status: d.status,
    wallMs: Math.round(wallMs),
    msPerItem: round(wallMs / items, 3),
    histories: all.length,
    parentEvents: counts[0],
    largestEvents: Math.max(...counts),
    totalEvents,
    eventsPerItem: round(totalEvents / items, 2),
    workerPeakRssMb: round(workerPeakRssMb),
    lostWorkflowTasks: lostWorkflowTasks(all),
    cpuSeconds: { worker: round(workerCpu, 1), ...(serverCpu0 !== undefined && serverCpu1 !== undefined && { server: round(serverCpu1 - serverCpu0, 1) }) },
    workerCpuMsPerItem: round((workerCpu * 1000) / items, 3),
    throughput: throughput(started, closed, times),
    itemsCounted: times.length,
  };
  env.log(`${items} items: ${d.status} in ${run.wallMs} ms (${run.msPerItem} ms an item, worker CPU ${run.workerCpuMsPerItem} ms an item); ${run.histories} histories, largest ${run.largestEvents} events; ${run.lostWorkflowTasks.timedOut} workflow tasks timed out; worker RSS peak ${run.workerPeakRssMb} MB`);
  return run;
}

/** Runs the loop at each size in turn on one worker process, after a warm-up run (none when `warmupItems` is 0). */
export async function forEachScale(env: ScaleEnv, sizes: number[], { warmupItems = 20 }: { warmupItems?: number } = {}) {
  const taskQueue = `bench-foreach-${process.pid}-${Date.now().toString(36)}`;
  const rss = { peak: 0 };
  const t0 = performance.now();
  const { result: runs, workers } = await withWorkerProcesses(
    env,
    1,
    taskQueue,
    async ([worker]) => {
      // The worker's first run opens its analytics database and warms the JIT: not part of a figure.
      if (warmupItems > 0) {
        await runOnce(env, warmupItems, taskQueue, rss, worker);
        await analyticsSettled(env.log);
      }
      const measured: ForEachRun[] = [];
      for (const items of sizes) measured.push(await runOnce(env, items, taskQueue, rss, worker));
      return measured;
    },
    (_, sample) => {
      rss.peak = Math.max(rss.peak, sample.rssMb);
    },
  );
  return {
    benchmark: 'scale-foreach',
    chunkItems: FOREACH_CHILD_THRESHOLD,
    concurrency: CONCURRENCY,
    tool: 'fs.read (local activity)',
    runs,
    wallSeconds: round((performance.now() - t0) / 1000),
    workerPeakRssMb: workers[0].peakRssMb,
    maxEventsAllowed: MAX_EVENTS,
    ok: runs.every((r) => r.status === 'completed' && r.largestEvents < MAX_EVENTS),
  };
}

export type ForEachReport = Awaited<ReturnType<typeof forEachScale>>;

/** Time per item by size; the largest run's throughput over its course. */
export function forEachPlots(report: ForEachReport, load: number): Plots {
  const largest = report.runs.at(-1)!;
  const mid = mean(largest.throughput.slice(1, -1).map((w) => w.itemsPerSecond));
  return {
    '': lines({
      title: `forEach: time per item by size (chunks of ${report.chunkItems.toLocaleString('en')}, ${report.concurrency} at once; load ${round(load)})`,
      xTitle: 'items in the forEach (log scale)',
      yTitle: 'ms per item (wall time / items)',
      logX: true,
      points: report.runs.flatMap((r) => [
        { series: 'wall time per item', x: r.items, y: r.msPerItem },
        { series: "worker's CPU time per item", x: r.items, y: r.workerCpuMsPerItem },
      ]),
    }),
    '-progress': lines({
      title: `forEach of ${largest.items.toLocaleString('en')} items: throughput over the run (load ${round(load)})`,
      xTitle: 'seconds since the run started',
      yTitle: 'items completed per second',
      points: largest.throughput.map((w) => ({ series: 'items per second', x: w.atSeconds, y: w.itemsPerSecond })),
      rules: [{ value: round(mid, 0), label: `mean ${round(mid, 0)} items/s` }],
    }),
  };
}

async function main(): Promise<void> {
  await runScaleBench('scale-foreach', log, async (env, smoke) => {
    const report = await forEachScale(env, smoke ? SMOKE_SIZES : FULL_SIZES);
    return { report, plots: (load) => forEachPlots(report, load), ...(!report.ok && { failure: `a run did not complete, or a history reached ${MAX_EVENTS} events` }) };
  });
}

if (require.main === module) runMain(main, log);
