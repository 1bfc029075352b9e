/**
 * Scale: 200 plan runs started at once complete on one worker process, and then on two, each run a
 * chain of 10 no-op tool calls (`fs.read` of a tiny file as an activity, through `runTool`). What a
 * second worker buys: throughput, and the step latency the runs see. Rounds alternate (1, 2, 2, 1,
 * 1, 2 workers) so the shared machine's drift falls on both alike; each round has its own task queue and
 * fresh worker processes, warmed up before it is measured.
 *
 *   npm run bench:scale              (all three scale benchmarks at full size)
 *   node dist/bench/scale-runs.js    (this one; CADRE_BENCH=smoke for a few seconds' size)
 *
 * Step latency, from the runs' histories: from the moment a step could start (its predecessor's
 * activity completed, or the run started) to its own activity's completion; its activity part is
 * scheduled → completed (waiting for a worker's slot included). Also the CPU seconds each process
 * used (workers, server, this client): on a 2-core machine they say whether a second worker had
 * any core to run on. Writes bench/results/scale-runs.json and a plot of the step latency
 * distributions (scale-runs.svg).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { temporal } from '@temporalio/proto';
import { formatIssues, validatePlan } from '../src/plan-format/validate';
import type { CompiledPlan } from '../src/plan-format/types';
import { type Plots, distribution } from './plot';
import { analyticsSettled, runMain } from './run-main';
import { type ScaleEnv, lostWorkflowTasks, runScaleBench, withWorkerProcesses } from './scale-env';
import { eventMs, machine, percentiles, processCpuSeconds, round } from './stats';

export interface RunsSize {
  runs: number;
  steps: number;
  /** Rounds of each configuration (1 worker, 2 workers), in the order 1, 2, 2, 1, 1, 2, ... */
  rounds: number;
}

export const FULL_SIZE: RunsSize = { runs: 200, steps: 10, rounds: 3 };
export const SMOKE_SIZE: RunsSize = { runs: 10, steps: 3, rounds: 1 };
const WARMUP_RUNS = 20;
/** Histories fetched at once after a round. */
const FETCH_AT_ONCE = 20;

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = temporal.api.enums.v1.EventType;

function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

function chainPlan(steps: number, workspace: string): CompiledPlan {
  const result = validatePlan(
    {
      name: 'bench-concurrent-chain',
      workspace,
      steps: Array.from({ length: steps }, (_, i) => ({ id: `s${i}`, ...(i > 0 && { dependsOn: [`s${i - 1}`] }), local: false, tool: 'fs.read', with: { path: 'noop.txt' } })),
    },
    { baseDir: workspace },
  );
  if (!result.ok) throw new Error(formatIssues(result.issues));
  return result.plan;
}

/** Each step's latency (from when it could start) and its activity's (scheduled → completed), from a chain's history. */
export function stepLatencies(events: HistoryEvent[]): { step: number[]; activity: number[]; run: number } {
  const scheduled = new Map<string, number>();
  const step: number[] = [];
  const activity: number[] = [];
  let ready = eventMs(events[0]);
  for (const event of events) {
    // Steps' activities only: a run's question of which host holds its workspace (a fleet) is the run's, counted in its first step's time.
    if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && event.activityTaskScheduledEventAttributes?.activityType?.name === 'runTool') {
      scheduled.set(String(event.eventId), eventMs(event));
    } else if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED && scheduled.has(String(event.activityTaskCompletedEventAttributes?.scheduledEventId))) {
      const at = eventMs(event);
      const from = scheduled.get(String(event.activityTaskCompletedEventAttributes?.scheduledEventId));
      if (from !== undefined) activity.push(at - from);
      step.push(at - ready);
      ready = at;
    }
  }
  return { step, activity, run: eventMs(events.at(-1)!) - eventMs(events[0]) };
}

async function histories(env: ScaleEnv, ids: string[]): Promise<HistoryEvent[][]> {
  const all: HistoryEvent[][] = [];
  for (let i = 0; i < ids.length; i += FETCH_AT_ONCE) {
    const part = await Promise.all(ids.slice(i, i + FETCH_AT_ONCE).map(async (id) => (await env.client.client.workflow.getHandle(id).fetchHistory()).events ?? []));
    all.push(...part);
  }
  return all;
}

/** Starts `runs` runs at once and waits for them all; their ids, and the wall time from the first start to the last end. */
async function burst(env: ScaleEnv, plan: CompiledPlan, runs: number, taskQueue: string, tag: string): Promise<{ ids: string[]; wallMs: number }> {
  const ids = Array.from({ length: runs }, (_, i) => `bench-runs-${tag}-${i}`);
  const t0 = performance.now();
  await Promise.all(ids.map((workflowId) => env.client.start(plan, {}, { workflowId, taskQueue })));
  const ends = await Promise.all(ids.map((id) => env.client.result(id, { readStored: false })));
  const wallMs = performance.now() - t0;
  const failed = ends.filter((d) => d.status !== 'completed');
  if (failed.length > 0) throw new Error(`${failed.length} of ${runs} runs did not complete (${failed[0].status}${failed[0].reason ? `: ${failed[0].reason}` : ''})`);
  return { ids, wallMs };
}

export interface Round {
  workers: number;
  wallMs: number;
  runsPerSecond: number;
  stepsPerSecond: number;
  stepMs: ReturnType<typeof percentiles>;
  /** Steps after each run's first: the first waits for its run's first workflow task, behind every run started at once. */
  laterStepMs: ReturnType<typeof percentiles>;
  activityMs: ReturnType<typeof percentiles>;
  runMs: ReturnType<typeof percentiles>;
  eventsPerRun: number;
  lostWorkflowTasks: { timedOut: number; failed: number };
  workerPeakRssMb: number[];
  cpuSeconds: { workers: number[]; server?: number; client: number };
  /** CPU seconds of every process above, per second of wall time: how many of the cores the round kept busy. */
  coresBusy: number;
  loadAverage: number;
  /** Every step's latency, for the plot (not in the JSON). */
  steps: number[];
}

async function round1(env: ScaleEnv, size: RunsSize, workers: number, index: number, workspace: string): Promise<Round> {
  const tag = `${process.pid}-${Date.now().toString(36)}-r${index}-w${workers}`;
  const taskQueue = `bench-runs-${tag}`;
  const plan = chainPlan(size.steps, workspace);
  const { result, workers: reports } = await withWorkerProcesses(env, workers, taskQueue, async (processes) => {
    await burst(env, plan, Math.min(WARMUP_RUNS, size.runs), taskQueue, `${tag}-warm`);
    await analyticsSettled(env.log);
    // CPU seconds of every process over the measured burst alone.
    const workers0 = await Promise.all(processes.map((p) => p.cpuSeconds()));
    const server0 = processCpuSeconds(env.serverPid);
    const client0 = process.cpuUsage();
    const measured = await burst(env, plan, size.runs, taskQueue, tag);
    const workers1 = await Promise.all(processes.map((p) => p.cpuSeconds()));
    const server1 = processCpuSeconds(env.serverPid);
    const client = process.cpuUsage(client0);
    const cpu = {
      workers: workers1.map((c, i) => round(c - workers0[i], 1)),
      ...(server0 !== undefined && server1 !== undefined && { server: round(server1 - server0, 1) }),
      client: round((client.user + client.system) / 1e6, 1),
    };
    return { ...measured, cpu };
  });
  const { cpu } = result;
  const all = await histories(env, result.ids);
  const steps = all.flatMap((events) => stepLatencies(events).step);
  const round_: Round = {
    workers,
    wallMs: Math.round(result.wallMs),
    runsPerSecond: round(size.runs / (result.wallMs / 1000), 2),
    stepsPerSecond: round((size.runs * size.steps) / (result.wallMs / 1000), 1),
    stepMs: percentiles(steps),
    laterStepMs: percentiles(all.flatMap((events) => stepLatencies(events).step.slice(1))),
    activityMs: percentiles(all.flatMap((events) => stepLatencies(events).activity)),
    runMs: percentiles(all.map((events) => stepLatencies(events).run), 0),
    eventsPerRun: round(all.reduce((sum, events) => sum + events.length, 0) / all.length, 1),
    lostWorkflowTasks: lostWorkflowTasks(all),
    workerPeakRssMb: reports.map((r) => r.peakRssMb),
    cpuSeconds: cpu,
    coresBusy: round((cpu.workers.reduce((a, b) => a + b, 0) + (cpu.server ?? 0) + cpu.client) / (result.wallMs / 1000), 2),
    loadAverage: round(machine().loadAverage[0], 2),
    steps,
  };
  env.log(
    `${workers} worker${workers > 1 ? 's' : ''}: ${size.runs} runs in ${round_.wallMs} ms (${round_.stepsPerSecond} steps/s); step p50 ${round_.stepMs.p50} ms, p99 ${round_.stepMs.p99} ms; RSS ${round_.workerPeakRssMb.join(' + ')} MB; load ${round_.loadAverage}`,
  );
  return round_;
}

/** The order of the rounds: 1, 2, 2, 1, 1, 2, ... workers. */
export const roundOrder = (rounds: number): number[] => Array.from({ length: rounds * 2 }, (_, i) => ((i % 4 === 0 || i % 4 === 3) ? 1 : 2));

export async function runsScale(env: ScaleEnv, size: RunsSize) {
  const workspace = path.join(env.tmp, 'runs');
  mkdirSync(workspace, { recursive: true });
  writeFileSync(path.join(workspace, 'noop.txt'), 'ok');
  const rounds: Round[] = [];
  for (const [i, workers] of roundOrder(size.rounds).entries()) rounds.push(await round1(env, size, workers, i, workspace));
  const summary = (workers: number) => {
    const mine = rounds.filter((r) => r.workers === workers);
    return {
      workers,
      rounds: mine.length,
      stepsPerSecond: mine.map((r) => r.stepsPerSecond),
      stepP50Ms: mine.map((r) => r.stepMs.p50),
      stepP99Ms: mine.map((r) => r.stepMs.p99),
      laterStepP99Ms: mine.map((r) => r.laterStepMs.p99),
      pooledStepMs: percentiles(mine.flatMap((r) => r.steps)),
      coresBusy: mine.map((r) => r.coresBusy),
    };
  };
  const one = summary(1);
  const two = summary(2);
  return {
    benchmark: 'scale-runs',
    runs: size.runs,
    stepsPerRun: size.steps,
    tool: 'fs.read (activity)',
    oneWorker: one,
    twoWorkers: two,
    // Each pair of rounds next to each other (1 then 2 workers, or 2 then 1): the machine's load drifts less within a pair.
    secondWorker: pairs(rounds).map(([one, two]) => ({
      rounds: `${rounds.indexOf(one) + 1} and ${rounds.indexOf(two) + 1}`,
      throughputRatio: round(two.stepsPerSecond / one.stepsPerSecond, 3),
      stepP50Ratio: round(two.stepMs.p50 / one.stepMs.p50, 3),
      stepP99Ratio: round(two.stepMs.p99 / one.stepMs.p99, 3),
      loadAverages: [one.loadAverage, two.loadAverage],
    })),
    rounds: rounds.map(({ steps: _steps, ...r }) => r),
    plotData: Object.fromEntries(rounds.map((r, i) => [`round ${i + 1}, ${r.workers} worker${r.workers > 1 ? 's' : ''}: ${round(r.stepsPerSecond, 0)} steps/s, p99 ${round(r.stepMs.p99 / 1000, 1)} s, load ${round(r.loadAverage, 0)}`, r.steps])),
  };
}

export type RunsReport = Awaited<ReturnType<typeof runsScale>>;

/** Rounds 1-2, 3-4, ... as [one worker, two workers]. */
function pairs(rounds: Round[]): [Round, Round][] {
  const out: [Round, Round][] = [];
  for (let i = 0; i + 1 < rounds.length; i += 2) {
    const [a, b] = [rounds[i], rounds[i + 1]];
    out.push(a.workers === 1 ? [a, b] : [b, a]);
  }
  return out;
}

/** The step latency distributions, one worker against two. */
export function runsPlots(report: RunsReport, load: number): Plots {
  return {
    '': distribution({
      title: `${report.runs} runs at once, ${report.stepsPerRun} steps each: step latency by round (load ${round(load)} at the start)`,
      xTitle: 'ms from when a step could start to its completion',
      logX: true,
      series: report.plotData,
    }),
  };
}

async function main(): Promise<void> {
  await runScaleBench('scale-runs', log, async (env, smoke) => {
    const { plotData, ...report } = await runsScale(env, smoke ? SMOKE_SIZE : FULL_SIZE);
    return { report, plots: (load) => runsPlots({ ...report, plotData }, load) };
  });
}

if (require.main === module) runMain(main, log);
