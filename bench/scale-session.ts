/**
 * Scale: a session of 10,000 turns runs to completion across continue-as-new (session.ts continues
 * as new every 100 messages), each message sent by Update-with-Start as `cadre send` sends it, on a
 * cycling scripted model. The question is whether a turn costs the same at turn 10,000 as at turn
 * 100: what the session carries from run to run (its kept messages, counts, the stream's last
 * events) must not grow with the turns.
 *
 *   npm run bench:scale                 (all three scale benchmarks at full size)
 *   node dist/bench/scale-session.js    (this one; CADRE_BENCH=smoke for a few seconds' size)
 *
 * Reports the time of every turn (as the sender waits for the reply), the mean of turns 100–1,000
 * against 9,000–10,000 and the least-squares slope from turn 100 on; the worker's and the server's
 * CPU per turn in the same windows (the machine is shared: wall time follows its load, CPU time far
 * less); the continue-as-new chain's histories; and the worker process's memory as the turns go by. Writes
 * bench/results/scale-session.json, a plot of time per turn over turn number (scale-session.svg)
 * and of the worker's memory (scale-session-memory.svg).
 */
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { endSession, sendMessage, sessionInput } from '../src/client/sessions';
import { SESSION_DEFAULTS } from '../src/workflows/session/session';
import { type Plots, lines } from './plot';
import { analyticsSettled, runMain } from './run-main';
import { type ScaleEnv, lostWorkflowTasks, runScaleBench, scratch, withWorkerProcesses } from './scale-env';
import { mean, percentile, percentiles, processCpuSeconds, round, slope } from './stats';

export const FULL_TURNS = 10_000;
export const SMOKE_TURNS = 150;
const WARMUP = 30;
/** Turns per point of the plot (the session continues as new every 100: one in each bucket). */
export const BUCKET = 100;

function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

/** Turns `from`–`to` (1-based, inclusive) of the run's per-turn times. */
const window = (times: number[], from: number, to: number) => times.slice(from - 1, to);

/** Sends `turns` messages one after another; the time of each, and the chain of runs' history sizes. */
async function converse(env: ScaleEnv, id: string, turns: number, taskQueue: string, workspace: string, progress: { turn: number }, continueEvery?: number) {
  const model = `scripted:${path.join(workspace, 'chat.yaml')}`;
  const start = sessionInput({ model, workspace, ...(continueEvery !== undefined && { continueEvery }) });
  const times: number[] = [];
  let firstRunId: string | undefined;
  for (let i = 1; i <= turns; i++) {
    const t = performance.now();
    const { reply } = await sendMessage(env.client, id, `message ${i}`, start, { taskQueue });
    times.push(performance.now() - t);
    if (reply !== 'ok') throw new Error(`reply ${i} was ${reply}`);
    firstRunId ??= (await env.client.client.workflow.getHandle(id).describe()).runId;
    progress.turn = i;
    if (i % 1000 === 0) env.log(`session: ${i}/${turns} turns, the last 1,000 at ${round(mean(times.slice(-1000)), 1)} ms a turn`);
  }
  await endSession(env.client, id);
  await env.client.client.workflow.getHandle(id).result();
  const runs: number[] = [];
  const lost = { timedOut: 0, failed: 0 };
  for (let runId: string | undefined = firstRunId; runId; ) {
    const events = (await env.client.client.workflow.getHandle(id, runId).fetchHistory()).events ?? [];
    runs.push(events.length);
    const these = lostWorkflowTasks([events]);
    lost.timedOut += these.timedOut;
    lost.failed += these.failed;
    runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
  }
  return { times, runs, lost };
}

/** `continueEvery`: the session's own default (100) unless given (the smoke test's few turns cross it more often). */
export async function sessionScale(env: ScaleEnv, turns: number, { continueEvery, warmup = WARMUP }: { continueEvery?: number; warmup?: number } = {}) {
  const workspace = scratch(env, 'session');
  writeFileSync(path.join(workspace, 'chat.yaml'), 'cycle: true\nturns:\n  - expect: { lastRole: user }\n    reply: { text: "ok", usage: { inputTokens: 40, outputTokens: 1 } }\n');
  const taskQueue = `bench-session-${process.pid}-${Date.now().toString(36)}`;
  const progress = { turn: 0 };
  /** Every second: the turn reached, the worker's memory, its CPU and the server's so far, the load average. */
  const memory: Sample[] = [];
  let measuring = false;
  const t0 = performance.now();
  const { result, workers } = await withWorkerProcesses(
    env,
    1,
    taskQueue,
    async ([worker]) => {
      await converse(env, `bench-session-warm-${process.pid}-${Date.now().toString(36)}`, warmup, taskQueue, workspace, { turn: 0 });
      await analyticsSettled(env.log);
      env.log(`measuring: ${turns} turns`);
      const workerCpu0 = await worker.cpuSeconds();
      const serverCpu0 = processCpuSeconds(env.serverPid);
      memory.length = 0;
      measuring = true;
      memory.push({ turn: 0, rssMb: NaN, heapMb: NaN, workerCpu: workerCpu0, serverCpu: serverCpu0, load: os.loadavg()[0] });
      const clientCpu0 = process.cpuUsage();
      const w0 = performance.now();
      const measured = await converse(env, `bench-session-${process.pid}-${Date.now().toString(36)}`, turns, taskQueue, workspace, progress, continueEvery);
      const wallMs = performance.now() - w0;
      const clientCpu = process.cpuUsage(clientCpu0);
      const serverCpu1 = processCpuSeconds(env.serverPid);
      const workerCpu1 = await worker.cpuSeconds();
      measuring = false;
      memory.push({ turn: turns, rssMb: NaN, heapMb: NaN, workerCpu: workerCpu1, serverCpu: serverCpu1, load: os.loadavg()[0] });
      const cpuSeconds = {
        worker: round(workerCpu1 - workerCpu0, 1),
        client: round((clientCpu.user + clientCpu.system) / 1e6, 1),
        ...(serverCpu0 !== undefined && serverCpu1 !== undefined && { server: round(serverCpu1 - serverCpu0, 1) }),
      };
      return { ...measured, wallMs, cpuSeconds };
    },
    (_, sample) => {
      if (measuring) memory.push({ turn: progress.turn, rssMb: round(sample.rssMb), heapMb: round(sample.heapMb), workerCpu: sample.cpuSeconds, serverCpu: processCpuSeconds(env.serverPid), load: round(os.loadavg()[0], 2) });
    },
  );
  const { times, runs, lost, wallMs, cpuSeconds } = result;
  // The windows at full size (turns 100–1,000 against 9,000–10,000); the same fractions at any size.
  const early = { from: Math.max(1, Math.round(turns / 100)), to: Math.round(turns / 10) };
  const late = { from: Math.round(turns * 0.9), to: turns };
  const earlyMean = mean(window(times, early.from, early.to));
  const lateMean = mean(window(times, late.from, late.to));
  const cpu = cpuPerTurn(memory);
  const during = (w: { from: number; to: number }) => ({
    turns: `${w.from}-${w.to}`,
    meanMs: round(mean(window(times, w.from, w.to)), 2),
    workerCpuMs: round(cpu.worker(w.from - 1, w.to), 2),
    ...(cpu.server && { serverCpuMs: round(cpu.server(w.from - 1, w.to), 2) }),
    loadAverage: round(mean(memory.filter((m) => m.turn >= w.from - 1 && m.turn <= w.to).map((m) => m.load)), 1),
  });
  const fromTurn = early.from;
  const xs = times.map((_, i) => i + 1).slice(fromTurn - 1);
  const perTurnSlope = slope(xs, times.slice(fromTurn - 1));
  const buckets = Array.from({ length: Math.ceil(turns / BUCKET) }, (_, b) => {
    const part = times.slice(b * BUCKET, (b + 1) * BUCKET);
    const sorted = [...part].sort((a, c) => a - c);
    const from = b * BUCKET;
    const to = Math.min(turns, from + BUCKET);
    return {
      fromTurn: from + 1,
      mean: round(mean(part)),
      p50: round(percentile(sorted, 50)),
      p95: round(percentile(sorted, 95)),
      workerCpuMs: round(cpu.worker(from, to)),
      ...(cpu.server && { serverCpuMs: round(cpu.server(from, to)) }),
    };
  });
  const historyEvents = runs.reduce((a, b) => a + b, 0);
  return {
    benchmark: 'scale-session',
    turns,
    continueEvery: continueEvery ?? SESSION_DEFAULTS.continueEvery,
    model: 'scripted (cycling one-turn scenario)',
    wallSeconds: round(wallMs / 1000),
    msPerTurn: percentiles(times),
    // Wall time per turn (what the sender waits) and CPU per turn (what the machine's load inflates less).
    windows: {
      early: during(early),
      late: during(late),
      lateOverEarly: round(lateMean / earlyMean, 3),
      workerCpuLateOverEarly: round(cpu.worker(late.from - 1, late.to) / (late.to - late.from + 1) / (cpu.worker(early.from - 1, early.to) / (early.to - early.from + 1)), 3),
    },
    slope: { fromTurn, msPerTurnPer1000Turns: round(perTurnSlope * 1000, 3) },
    histories: { runs: runs.length, largestRunEvents: Math.max(...runs), meanRunEvents: round(mean(runs)), totalEvents: historyEvents, eventsPerTurn: round(historyEvents / turns, 2), lostWorkflowTasks: lost },
    workerPeakRssMb: workers[0].peakRssMb,
    workerRssMb: (() => {
      const rss = memory.filter((m) => !Number.isNaN(m.rssMb));
      return { first: rss[0]?.rssMb, last: rss.at(-1)?.rssMb, max: round(Math.max(...rss.map((m) => m.rssMb))) };
    })(),
    cpuSeconds,
    workerCpuMsPerTurn: round((cpuSeconds.worker * 1000) / turns, 2),
    benchmarkSeconds: round((performance.now() - t0) / 1000),
    buckets,
    memory: memory.filter((m) => !Number.isNaN(m.rssMb)).map(({ turn, rssMb, heapMb, load }) => ({ turn, rssMb, heapMb, load })),
  };
}

interface Sample {
  turn: number;
  rssMb: number;
  heapMb: number;
  /** CPU seconds so far: the worker's, and the server's when this benchmark started it. */
  workerCpu: number;
  serverCpu: number | undefined;
  load: number;
}

/**
 * CPU per turn between two turn numbers, in ms, from the per-second samples: CPU seconds so far
 * against the turn reached, interpolated at the two turns.
 */
function cpuPerTurn(samples: Sample[]) {
  const sorted = [...samples].sort((a, b) => a.turn - b.turn);
  const at = (turn: number, key: 'workerCpu' | 'serverCpu'): number => {
    const points = sorted.filter((s) => s[key] !== undefined);
    const after = points.findIndex((s) => s.turn >= turn);
    if (after <= 0) return (points[Math.max(0, after)]?.[key] ?? NaN) as number;
    const [a, b] = [points[after - 1], points[after]];
    const share = b.turn === a.turn ? 1 : (turn - a.turn) / (b.turn - a.turn);
    return (a[key] as number) + share * ((b[key] as number) - (a[key] as number));
  };
  const per = (key: 'workerCpu' | 'serverCpu') => (from: number, to: number) => ((at(to, key) - at(from, key)) * 1000) / Math.max(1, to - from);
  return { worker: per('workerCpu'), ...(sorted.every((s) => s.serverCpu !== undefined) && { server: per('serverCpu') }) };
}

export type SessionReport = Awaited<ReturnType<typeof sessionScale>>;

/** Time per turn over turn number; the worker's memory over turn number. */
export function sessionPlots(report: SessionReport, load: number): Plots {
  const { early, late } = report.windows;
  return {
    '': lines({
      title: `A ${report.turns.toLocaleString('en')}-turn session: time per turn (${BUCKET} turns a point; load ${round(load)})`,
      xTitle: 'turn',
      yTitle: 'ms per turn (the sender waits)',
      symbols: false,
      points: [
        ...report.buckets.map((b) => ({ series: `mean of ${BUCKET} turns`, x: b.fromTurn, y: b.mean })),
        ...report.buckets.map((b) => ({ series: `p50 of ${BUCKET} turns`, x: b.fromTurn, y: b.p50 })),
        ...report.buckets.map((b) => ({ series: `p95 of ${BUCKET} turns`, x: b.fromTurn, y: b.p95 })),
        ...report.buckets.map((b) => ({ series: "worker's CPU per turn", x: b.fromTurn, y: b.workerCpuMs })),
        ...report.buckets.flatMap((b) => (b.serverCpuMs === undefined ? [] : [{ series: "server's CPU per turn", x: b.fromTurn, y: b.serverCpuMs }])),
      ],
      rules: [
        { value: early.meanMs, label: `turns ${early.turns}: mean ${early.meanMs} ms`, labelAtLeft: true },
        { value: late.meanMs, label: `turns ${late.turns}: mean ${late.meanMs} ms` },
      ],
    }),
    '-memory': lines({
      title: `A ${report.turns.toLocaleString('en')}-turn session: the worker process's memory`,
      xTitle: 'turn',
      yTitle: 'MB',
      symbols: false,
      points: [...report.memory.map((m) => ({ series: 'RSS', x: m.turn, y: m.rssMb })), ...report.memory.map((m) => ({ series: 'V8 heap used', x: m.turn, y: m.heapMb }))],
    }),
  };
}

async function main(): Promise<void> {
  await runScaleBench('scale-session', log, async (env, smoke) => {
    const report = await sessionScale(env, smoke ? SMOKE_TURNS : FULL_TURNS);
    return { report, plots: (load) => sessionPlots(report, load) };
  });
}

if (require.main === module) runMain(main, log);
