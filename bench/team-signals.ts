/**
 * Benchmark: how fast a team run sees its workers' state changes. Ten scripted team workers (the
 * plan of test/teams.test.ts) each go blocked → running CYCLES times and then complete, 103 moves
 * each, every move a `workerState` signal to the plan run: 1,030 signals. From the histories we
 * take, for each signal, the time from the move being recorded (the worker's workflow task that
 * made it completed and sent the signal) to the start of the first workflow task of the team run
 * after the signal (when its code ran with it); and, in parts, from the start of the worker's task
 * (`at`, its workflow time). Fails when a signal is lost or applied
 * out of order; a missed latency target is only reported.
 *
 *   npm run bench        (TEMPORAL_ADDRESS=host:port to use an existing server)
 *
 * Prints one JSON object and writes it to bench/results/team-signals.json; progress goes to stderr.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { defaultPayloadConverter } from '@temporalio/common';
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import YAML from 'yaml';
import { formatIssues, validatePlan } from '../src/spec/validate';
import type { WorkerStateSignal } from '../src/protocol/definitions';
import { type WorkerState, WorkerStateMachine } from '../src/protocol/worker-state';
import { installConciseLogging } from '../src/worker/logging';
import { startBenchWorker } from './bench-worker';
import { analyticsSettled, resultsFile, runMain, writeResults } from './run-main';
import { scaled } from './scale';

const WORKERS = 10;
const CYCLES = scaled(50, 20);
const WARMUP_CYCLES = 5;
/** Each worker's moves: running, then blocked/running per cycle, then completing and completed (103 for 50). */
const movesFor = (cycles: number): WorkerState[] => ['running', ...Array.from({ length: cycles }, () => ['blocked', 'running'] as WorkerState[]).flat(), 'completing', 'completed'];
const TARGET_P99_MS = 100;
const RESULTS_FILE = resultsFile('team-signals');

const EventType = temporal.api.enums.v1.EventType;

function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

const round = (value: number, digits = 1) => Number(value.toFixed(digits));

/** Nearest-rank percentile of sorted values. */
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

async function main(): Promise<void> {
  installConciseLogging('WARN');
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

    const { wallMs, workers, events, workerEvents } = await worker.runUntil(
      (async () => {
        log(`warm-up: ${WORKERS} workers, ${WARMUP_CYCLES} cycles each`);
        await teamRun('warm-team', WARMUP_CYCLES);
        await analyticsSettled(log);
        log(`measuring: ${WORKERS} workers, ${CYCLES} cycles each (${WORKERS * movesFor(CYCLES).length} signals)`);
        return teamRun('team', CYCLES);
      })(),
    );
    await client.close();
    await connection.close();

    // Walk the team run's history. Signals that arrive while a workflow task runs are written after it
    // completes, so the next WorkflowTaskStarted is the task whose activation carries them; its time
    // is the team run's workflow time when the board applied them (the `seenAt` it records).
    const key = (s: WorkerStateSignal) => `${s.workflowId}#${s.seq}`;
    // When each worker's workflow task that sent a signal completed (its SignalExternal...Initiated event).
    const sentMs = new Map<string, number>();
    for (const event of workerEvents) {
      const attrs = event.signalExternalWorkflowExecutionInitiatedEventAttributes;
      if (attrs?.signalName === 'workerState') sentMs.set(key(defaultPayloadConverter.fromPayload<WorkerStateSignal>(attrs.input!.payloads![0])), tsToMs(event.eventTime));
    }
    const pending: { signal: WorkerStateSignal; signalledMs: number }[] = [];
    const latencies: number[] = [];
    /** From the move being recorded (the worker's task completed, the signal sent) to the team run's task. */
    const committed: number[] = [];
    const serverPart: number[] = [];
    /** The latency in three parts: the worker's own task, the server's delivery, the wait for a team-run task. */
    const split = { workerTask: [] as number[], delivery: [] as number[], teamQueue: [] as number[] };
    const highestSeq = new Map<string, number>();
    const seen = new Map<string, WorkerStateSignal>();
    const early: WorkerStateSignal[] = [];
    let outOfOrder = 0;
    for (const event of events) {
      const attrs = event.workflowExecutionSignaledEventAttributes;
      if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED && attrs?.signalName === 'workerState') {
        const signal = defaultPayloadConverter.fromPayload<WorkerStateSignal>(attrs.input!.payloads![0]);
        // History order is the order the handler gets them: each worker's seq must go up by exactly 1
        // (a swapped pair counts twice, the one after it not at all: we compare with the highest seen).
        const next = (highestSeq.get(signal.workflowId) ?? 0) + 1;
        if (signal.seq !== next) outOfOrder++;
        if (signal.seq > next) early.push(signal);
        highestSeq.set(signal.workflowId, Math.max(next - 1, signal.seq));
        seen.set(key(signal), signal);
        pending.push({ signal, signalledMs: tsToMs(event.eventTime) });
      } else if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED) {
        const startedMs = tsToMs(event.eventTime);
        for (const { signal, signalledMs } of pending.splice(0)) {
          const atMs = Date.parse(signal.at);
          latencies.push(startedMs - atMs);
          // `at` is the worker's workflow-task start, so this includes that task's own run and completion.
          serverPart.push(signalledMs - atMs);
          const sent = sentMs.get(key(signal)) ?? NaN;
          committed.push(startedMs - sent);
          split.workerTask.push(sent - atMs);
          split.delivery.push(signalledMs - sent);
          split.teamQueue.push(startedMs - signalledMs);
        }
      }
    }
    if (pending.length > 0) throw new Error(`${pending.length} signals after the team run's last workflow task`);
    for (const values of [latencies, committed, serverPart, ...Object.values(split)]) values.sort((a, b) => a - b);

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
    // would undo it): the target is measured from there. From the task's start is reported too.
    const p99 = pct(committed, 99);
    const report = {
      signals: seen.size,
      lost: expected - seen.size,
      outOfOrder,
      overtook,
      board,
      latencyMs: { p50: pct(committed, 50), p90: pct(committed, 90), p99, max: committed.at(-1) },
      fromWorkerTaskStartMs: { p50: pct(latencies, 50), p90: pct(latencies, 90), p99: pct(latencies, 99), max: latencies.at(-1) },
      serverMs: { p50: pct(serverPart, 50), p99: pct(serverPart, 99) },
      splitMs: Object.fromEntries(Object.entries(split).map(([part, values]) => [part, { p50: round(pct(values, 50)), p99: round(pct(values, 99)), max: round(values.at(-1) ?? NaN) }])),
      wallSeconds: round(wallMs / 1000, 2),
      // The load: how fast the signals came. Each blocked wait is 10 ms as asked, or the server's
      // timer precision (about 1 s when its timer queue is busy), which sets the pace more than cadre does.
      signalsPerSecond: round(seen.size / (wallMs / 1000)),
      target: `p99 < ${TARGET_P99_MS} ms`,
      meetsTarget: p99 < TARGET_P99_MS,
      workers: WORKERS,
      cycles: CYCLES,
      teamRunEvents: events.length,
      server: server.address,
      node: process.version,
      date: new Date().toISOString(),
    };
    writeResults(RESULTS_FILE, report);
    // Signals sent in one workflow task may arrive in any order (`outOfOrder` counts them as they
    // arrived); what must hold is that none is lost and the board applied each once, in order.
    if (report.lost !== 0 || !board.appliedInOrder) throw new Error(`state signals lost or applied out of order: ${JSON.stringify({ lost: report.lost, outOfOrder, board })}`);
  } finally {
    await server.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

runMain(main, log);
