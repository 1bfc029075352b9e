/**
 * Benchmark: what a team's moves cost and how fast its team run sees them. Twenty scripted team
 * workers (the plan of test/teams.test.ts) each go blocked → running CYCLES times and then complete,
 * all at once (their waits end together): 20 × 27 moves at CI scale, 20 × 103 at full. Workers send
 * their moves to the team run in batches, spaced out the more they have sent (worker-reporter.ts), so
 * the team run takes a bounded number of signals however often its workers move; clients read a
 * running worker's state from its own query. The target is the CPU a move costs in all (this process,
 * which runs the workers, and the server): at most 15 ms (docs/benchmarks.md, "Teams").
 * From the histories we take, for each move, the time from its being recorded (the worker's
 * workflow task that made it) to:
 *  - the start of the first workflow task of the team run after the signal that carried it, when its
 *    code ran with it (the board's `seenAt`): `latencyMs`;
 *  - that task's completion, from when a query of the board shows the move: `visibleMs`.
 * Each in parts: the worker's task, the server's delivery, the wait for a team-run task, that task.
 * Fails when a move is lost or applied out of order; a missed target is only reported.
 *
 *   npm run bench        (TEMPORAL_ADDRESS=host:port to use an existing server)
 *
 * Prints one JSON object and writes it to bench/results/team-signals.json (and a plot beside it);
 * progress goes to stderr.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import YAML from 'yaml';
import { formatIssues, validatePlan } from '../src/plan-format/validate';
import { type WorkerState, WorkerStateMachine } from '../src/protocol/worker-state';
import { installConciseLogging } from '../src/worker/logging';
import { startBenchWorker } from './bench-worker';
import { analyticsSettled, resultsFile, runMain, writeResults } from './run-main';
import { scaled } from './scale';
import { loadAverage, pct, pidCpuMs, processCpuMs, round } from './stats';
import { signalKey as key, signalTimings } from './team-signals-history';
import { lines, writePlot } from './plot';

const WORKERS = 20;
const CYCLES = scaled(50, 12);
const WARMUP_CYCLES = 5;
/** Each worker's moves: running, then blocked/running per cycle, then completing and completed (103 for 50). */
const movesFor = (cycles: number): WorkerState[] => ['running', ...Array.from({ length: cycles }, () => ['blocked', 'running'] as WorkerState[]).flat(), 'completing', 'completed'];
/** Worker and server CPU a move costs, in all (issue 38: a machine of any size can hold it). */
const TARGET_CPU_MS_PER_MOVE = 15;
const RESULTS_FILE = resultsFile('team-signals');

const diff = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : a - b);

function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

async function main(): Promise<void> {
  installConciseLogging('WARN');
  const loadAtStart = loadAverage();
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'cadre-bench-team-signals-'));
  /** A worker that reports blocked (checking again after 10ms) `cycles` times, then completes. */
  const planFor = (cycles: number) => {
    const say = (state: string, reason: string, extra: Record<string, unknown> = {}) => ({ reply: { toolCalls: [{ name: 'signal_state', args: { state, reason, ...extra } }] } });
    const turns = [...Array.from({ length: cycles }, (_, i) => say('blocked', `waiting on CI, round ${i + 1}`, { retryAfter: '10ms' })), say('completing', 'green', { result: 'ok' })];
    const scenario = path.join(tmp, `busy-${cycles}.yaml`);
    writeFileSync(scenario, YAML.stringify({ turns }));
    const yaml = `name: team-signals\nteam: {}\nsteps:\n  - id: w\n    forEach: "{{ inputs.items }}"\n    as: n\n    concurrency: ${WORKERS}\n    agent: { prompt: "work on {{ n }}", model: "scripted:${scenario}", maxTurns: ${cycles + 10} }\ninputs:\n  items: { type: json }\n`;
    const result = validatePlan(YAML.parse(yaml), { baseDir: tmp });
    if (!result.ok) throw new Error(formatIssues(result.issues));
    return result.plan;
  };
  const { server, worker, client, taskQueue, connection } = await startBenchWorker('team-signals', tmp, log);
  try {

    const teamRun = async (name: string, cycles: number) => {
      const t0 = performance.now();
      const items = Array.from({ length: WORKERS }, (_, i) => i);
      const { workflowId } = await client.start(planFor(cycles), { items }, { workflowId: `bench-${name}-${process.pid}`, taskQueue });
      const handle = client.client.workflow.getHandle(workflowId);
      await handle.result();
      const wallMs = performance.now() - t0;
      const d = await client.diagnostics(workflowId);
      if (d.status !== 'completed') throw new Error(`${name} run ended ${d.status}`);
      const workers = d.workers ?? [];
      const workerEvents = (await Promise.all(workers.map(async (w) => (await client.client.workflow.getHandle(w.workflowId).fetchHistory()).events ?? []))).flat();
      return { wallMs, workers, events: (await handle.fetchHistory()).events ?? [], workerEvents };
    };

    const delay = monitorEventLoopDelay({ resolution: 5 });
    const { wallMs, workers, events, workerEvents, cpu } = await worker.runUntil(
      (async () => {
        log(`warm-up: ${WORKERS} workers, ${WARMUP_CYCLES} cycles each`);
        await teamRun('warm-team', WARMUP_CYCLES);
        await analyticsSettled(log);
        log(`measuring: ${WORKERS} workers, ${CYCLES} cycles each (${WORKERS * movesFor(CYCLES).length} moves)`);
        delay.enable();
        const cpu0 = { worker: processCpuMs(), server: pidCpuMs(server.pid) };
        try {
          return { ...(await teamRun('team', CYCLES)), cpu: { worker: processCpuMs() - cpu0.worker, server: diff(pidCpuMs(server.pid), cpu0.server) } };
        } finally {
          delay.disable();
        }
      })(),
    );
    await client.close();
    await connection.close();
    const loopDelay = { p50: round(delay.percentile(50) / 1e6), p99: round(delay.percentile(99) / 1e6), max: round(delay.max / 1e6) };

    const { timings, tasks, seen, early, outOfOrder, unapplied, signalsByName } = signalTimings(events, workerEvents);
    if (unapplied > 0) throw new Error(`${unapplied} signals after the team run's last completed workflow task`);
    const sorted = (values: number[]) => values.sort((x, y) => x - y);
    const distribution = (values: number[]) => {
      const v = sorted(values);
      return { p50: round(pct(v, 50)), p90: round(pct(v, 90)), p99: round(pct(v, 99)), max: round(v.at(-1) ?? NaN) };
    };
    /** From the move being recorded (the worker's task completed, the signal sent) to the team run's task starting. */
    const applied = timings.map((t) => t.startedMs - t.sentMs);
    /** ...and to that task's completion: when a query of the board shows it. */
    const visible = timings.map((t) => t.completedMs - t.sentMs);
    const parts = {
      workerTask: timings.map((t) => t.sentMs - t.atMs),
      delivery: timings.map((t) => t.signalledMs - t.sentMs),
      teamQueue: timings.map((t) => t.startedMs - t.signalledMs),
      teamTask: timings.map((t) => t.completedMs - t.startedMs),
    };
    const moves = movesFor(CYCLES);
    const expected = WORKERS * moves.length;
    // Which moves overtook the one before them, and whether both were sent by one workflow task of
    // the worker (same `at`: two SignalExternalWorkflowExecution commands in one completion).
    const overtook: Record<string, { count: number; sameWorkerTask: number }> = {};
    for (const signal of early) {
      const before = seen.get(key({ ...signal, seq: signal.seq - 1 }));
      const label = `${signal.from}>${signal.to} before ${before ? `${before.from}>${before.to}` : '?'}`;
      overtook[label] ??= { count: 0, sameWorkerTask: 0 };
      overtook[label].count++;
      if (before?.at === signal.at) overtook[label].sameWorkerTask++;
    }
    // The board's copy of each worker's trail equals the worker's when it applied every move once, in order.
    const machine = new WorkerStateMachine();
    for (const to of moves) machine.move(to, '', '');
    // The board holds early signals until the ones before them come, and drops repeats.
    const board = {
      workers: workers.length,
      duplicates: workers.reduce((n, w) => n + w.duplicates, 0),
      early: workers.reduce((n, w) => n + w.early, 0),
      appliedSeqs: workers.reduce((n, w) => n + w.seq, 0),
      appliedInOrder: workers.length === WORKERS && workers.every((w) => w.seq === moves.length && w.fingerprint === machine.fingerprint),
    };
    // A move exists once the worker's workflow task that made it completes (until then a crash
    // would undo it): both latencies are measured from there.
    const visibleMs = distribution(visible);
    const batch = sorted(tasks.map((t) => t.signals));
    const report = {
      signals: seen.size,
      lost: expected - seen.size,
      outOfOrder,
      overtook,
      board,
      visibleMs,
      latencyMs: distribution(applied),
      fromWorkerTaskStartMs: distribution(timings.map((t) => t.startedMs - t.atMs)),
      splitMs: Object.fromEntries(Object.entries(parts).map(([part, values]) => [part, distribution(values)])),
      // How the team run took them: signals a task applied, and how long its tasks took (server-stamped).
      teamTasks: { count: tasks.length, signalsByName, signalsPerTask: { p50: pct(batch, 50), p99: pct(batch, 99), max: batch.at(-1) }, ms: distribution(tasks.map((t) => t.ms)) },
      // The signals that carried the moves to the team run: workers send them in batches, spaced out.
      teamRunSignalsForMoves: (signalsByName.workerMoves ?? 0) + (signalsByName.workerState ?? 0),
      signalsPerMove: round(((signalsByName.workerMoves ?? 0) + (signalsByName.workerState ?? 0)) / seen.size, 3),
      // CPU per move, which other work on the machine inflates far less than latency: this process (the
      // workers' workflows and activities, the client) and the server, over the measured run.
      cpuMsPerMove: { worker: round(cpu.worker / seen.size, 2), ...(cpu.server !== undefined && { server: round(cpu.server / seen.size, 2) }) },
      // Whether this process's main thread (activities, the scripted model, the SDK's bridge) was held up.
      mainThreadDelayMs: loopDelay,
      wallSeconds: round(wallMs / 1000, 2),
      // The load: how fast the signals came. Each blocked wait is 10 ms as asked, or the server's
      // timer precision (about 1 s when its timer queue is busy), which sets the pace more than cadre does.
      signalsPerSecond: round(seen.size / (wallMs / 1000)),
      target: `worker + server CPU <= ${TARGET_CPU_MS_PER_MOVE} ms a move`,
      meetsTarget: cpu.server !== undefined && (cpu.worker + cpu.server) / seen.size <= TARGET_CPU_MS_PER_MOVE,
      workers: WORKERS,
      cycles: CYCLES,
      teamRunEvents: events.length,
      load: { atStart: loadAtStart, atEnd: loadAverage(), cpus: os.cpus().length },
      server: server.address,
      node: process.version,
      date: new Date().toISOString(),
    };
    writeResults(RESULTS_FILE, report);
    // The whole distribution, not only its percentiles: where the tail comes from, part by part.
    const curve = (series: string, values: number[]) => {
      const v = sorted(values);
      const at = [...Array.from({ length: 50 }, (_, i) => i * 2), 99, 100];
      return at.map((p) => ({ series, x: p, y: Math.max(0.1, p === 0 ? v[0] : pct(v, p)) }));
    };
    await writePlot(RESULTS_FILE.replace(/\.json$/, '.svg'), lines({
      title: `Team state: ${seen.size} moves of ${WORKERS} workers, latency by percentile (load average ${report.load.atStart[0]})`,
      xTitle: 'percentile of moves',
      yTitle: 'ms (log scale)',
      logY: true,
      points: [
        ...curve('move recorded → a query shows it', visible),
        ...curve('move recorded → team run applies it', applied),
        ...curve('of which: server delivery', parts.delivery),
        ...curve('of which: wait for a team-run task', parts.teamQueue),
        ...curve("of which: the team run's task", parts.teamTask),
      ],
      rules: [],
    }));
    // Signals sent in one workflow task may arrive in any order (`outOfOrder` counts them as they
    // arrived); what must hold is that none is lost and the board applied each once, in order.
    if (report.lost !== 0 || !board.appliedInOrder) throw new Error(`moves lost or applied out of order: ${JSON.stringify({ lost: report.lost, outOfOrder, board })}`);
  } finally {
    await server.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

runMain(main, log);
