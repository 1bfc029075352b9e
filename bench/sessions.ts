/**
 * Benchmark: a cadre session of 1,000 messages on the scripted provider against a hand-written
 * minimal Temporal loop (baseline-session.ts) calling the same `modelTurn` activity, on one worker
 * and one server (and the session again, messages after the first as plain updates, to show what
 * Update-with-Start costs). Reports wall time and history events per message for each, the largest history
 * of any run in the session's continue-as-new chain (it must stay under 10,000 events), and the
 * peak RSS of the process that runs the worker.
 *
 *   npm run bench        (TEMPORAL_ADDRESS=host:port to use an existing server)
 *
 * Prints one JSON object and writes it to bench/results/sessions.json, and the distributions of the
 * time to each reply to bench/results/sessions.svg; progress goes to stderr.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { endSession, sendMessage, sessionInput } from '../src/client/sessions';
import { sendUpdate } from '../src/protocol/session';
import { installConciseLogging } from '../src/worker/logging';
import { type baselineSession, sayUpdate, stopSignal } from './baseline-session';
import { startBenchWorker } from './bench-worker';
import { distribution, writePlot } from './plot';
import { resultsFile, runMain, writeResults } from './run-main';
import { scaled } from './scale';
import { percentiles } from './stats';

const MESSAGES = scaled(1000, 100);
const WARMUP = 30;
const HISTORY_LIMIT = 10_000;
const RESULTS_FILE = resultsFile('sessions');

function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

const round = (value: number, digits = 1) => Number(value.toFixed(digits));

async function main(): Promise<void> {
  installConciseLogging('WARN');
  const load0 = os.loadavg()[0];
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'cadre-bench-sessions-'));
  const scenario = path.join(tmp, 'chat.yaml');
  writeFileSync(scenario, 'cycle: true\nturns:\n  - expect: { lastRole: user }\n    reply: { text: "ok", usage: { inputTokens: 40, outputTokens: 1 } }\n');
  const model = `scripted:${scenario}`;
  const { server, worker, client, taskQueue, connection } = await startBenchWorker('sessions', tmp, log);
  try {
    const start = sessionInput({ model, workspace: tmp });

    /**
     * The session: every message by Update-with-Start, as `cadre send` sends it, or (`plainUpdates`)
     * the first one only and the rest as plain updates to the running session, as the loop gets them.
     */
    const cadreSession = async (id: string, messages: number, plainUpdates = false) => {
      const t0 = performance.now();
      let firstRunId: string | undefined;
      const handle = client.client.workflow.getHandle(id);
      const times: number[] = [];
      for (let i = 1; i <= messages; i++) {
        const text = `message ${i}`;
        const m0 = performance.now();
        const { reply } = plainUpdates && i > 1 ? await handle.executeUpdate(sendUpdate, { args: [{ text }] }) : await sendMessage(client, id, text, start, { taskQueue });
        times.push(performance.now() - m0);
        if (reply !== 'ok') throw new Error(`session reply ${i} was ${reply}`);
        firstRunId ??= (await client.client.workflow.getHandle(id).describe()).runId;
        if (i % 250 === 0) log(`session: ${i}/${messages} messages`);
      }
      const wallMs = performance.now() - t0;
      await endSession(client, id);
      await client.client.workflow.getHandle(id).result();
      // Follow the continue-as-new chain from the first run.
      const runs: number[] = [];
      for (let runId: string | undefined = firstRunId; runId; ) {
        const events = (await client.client.workflow.getHandle(id, runId).fetchHistory()).events ?? [];
        runs.push(events.length);
        runId = events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined;
      }
      return { wallMs, runs, times };
    };

    /** The baseline: one run, one update per message. */
    const baseline = async (id: string, messages: number) => {
      const handle = await client.client.workflow.start<typeof baselineSession>('baselineSession', { workflowId: id, taskQueue, args: [model] });
      const t0 = performance.now();
      const times: number[] = [];
      for (let i = 1; i <= messages; i++) {
        const m0 = performance.now();
        const reply = await handle.executeUpdate(sayUpdate, { args: [`message ${i}`] });
        times.push(performance.now() - m0);
        if (reply !== 'ok') throw new Error(`baseline reply ${i} was ${reply}`);
        if (i % 250 === 0) log(`baseline: ${i}/${messages} messages`);
      }
      const wallMs = performance.now() - t0;
      await handle.signal(stopSignal);
      await handle.result();
      const events = (await handle.fetchHistory()).events ?? [];
      return { wallMs, runs: [events.length], times };
    };

    const measured = await worker.runUntil(
      (async () => {
        log(`warm-up: ${WARMUP} messages each`);
        await cadreSession(`bench-warm-session-${process.pid}`, WARMUP);
        await baseline(`bench-warm-baseline-${process.pid}`, WARMUP);
        log(`measuring: ${MESSAGES} messages each`);
        const s = await cadreSession(`bench-session-${process.pid}`, MESSAGES);
        const b = await baseline(`bench-baseline-${process.pid}`, MESSAGES);
        const p = await cadreSession(`bench-session-plain-${process.pid}`, MESSAGES, true);
        return { s, b, p };
      })(),
    );
    await client.close();
    await connection.close();

    const summary = ({ wallMs, runs, times }: { wallMs: number; runs: number[]; times: number[] }) => ({
      wallMs: round(wallMs),
      msPerMessage: round(wallMs / MESSAGES, 2),
      replyMs: percentiles(times),
      runs: runs.length,
      historyEvents: runs.reduce((a, b) => a + b, 0),
      eventsPerMessage: round(runs.reduce((a, b) => a + b, 0) / MESSAGES, 2),
      largestRunEvents: Math.max(...runs),
    });
    const session = summary(measured.s);
    const base = summary(measured.b);
    const plain = summary(measured.p);
    const report = {
      messages: MESSAGES,
      model: 'scripted (cycling one-turn scenario)',
      session,
      baseline: base,
      sessionPlainUpdates: plain,
      wallTimeRatio: round(session.wallMs / base.wallMs, 3),
      plainUpdatesWallTimeRatio: round(plain.wallMs / base.wallMs, 3),
      eventsPerMessageRatio: round(session.eventsPerMessage / base.eventsPerMessage, 3),
      workerPeakRssMb: round(process.resourceUsage().maxRSS / 1024),
      loadAverage: [round(load0, 2), round(os.loadavg()[0], 2)],
      targets: {
        largestRunEvents: { value: session.largestRunEvents, below: HISTORY_LIMIT, met: session.largestRunEvents < HISTORY_LIMIT },
      },
      server: server.address,
      node: process.version,
      date: new Date().toISOString(),
    };
    writeResults(RESULTS_FILE, report);
    await writePlot(
      RESULTS_FILE.replace(/\.json$/, '.svg'),
      distribution({
        title: `${MESSAGES.toLocaleString('en')} messages one after another: time to each reply (load ${round(load0, 1)})`,
        xTitle: 'ms from sending a message to its reply',
        logX: true,
        series: { 'cadre session, Update-with-Start': measured.s.times, 'cadre session, plain updates': measured.p.times, 'minimal loop (one run, updates)': measured.b.times },
      }),
    );
    if (!report.targets.largestRunEvents.met) throw new Error(`a session run reached ${session.largestRunEvents} history events (limit ${HISTORY_LIMIT})`);
  } finally {
    await server.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

runMain(main, log);
