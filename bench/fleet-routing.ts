/**
 * Benchmark: what a fleet's routing costs, and how many runs a minute 1, 2 and 3 hosts take on this
 * machine (docs/scale.md, docs/benchmarks.md).
 *
 *   (1) Routing. A chain of STEPS no-op tool calls (`fs.read` as ordinary activities) by `runPlan`,
 *       on two workers of one server: one with no host (its runs are not bound), one that is a host
 *       (each run binds its workspace first, and every step goes to the host's own queue through
 *       common/host-route.ts). Interleaved, in a rotating order; the per-step difference is the
 *       routing's cost per step (target ≤ 1 ms), the per-run difference less the steps' that of
 *       binding.
 *   (2) Throughput. RUNS plans of SHORT_STEPS shell steps started at once on 1, 2 and 3 `cadre
 *       worker` processes, each a host (CADRE_HOST), all holding the workspace: each run is bound to
 *       whichever host answers first. Runs a minute, start to last end. On one machine the hosts
 *       share its cores: the figure says what more processes give here, not what more machines give.
 *
 *   npm run bench:fleet      (not in `npm run bench`: CI's minutes are counted)
 *
 * Prints one JSON object on stdout and writes it to bench/results/fleet-routing.json.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client, Connection } from '@temporalio/client';
import type { CompiledPlan } from '../src/plan-format/types';
import { formatIssues, validatePlan } from '../src/plan-format/validate';
import type { runPlan } from '../src/workflows';
import { resolveServer } from '../src/worker/dev-server';
import { registerSearchAttributes } from '../src/worker/embedded';
import { installConciseLogging } from '../src/worker/logging';
import { createCadreWorker } from '../src/worker/worker';
import { resultsFile, runMain, writeResults } from './run-main';
import { benchWorkflowBundle } from './bench-bundle';
import { scaled } from './scale';
import { loadAverage, round, spread } from './stats';
import { groupedBars, writePlots } from './plot';

const STEPS = 50;
const REPETITIONS = scaled(12, 4);
const WARMUPS = 2;
const RUNS = scaled(60, 20);
const SHORT_STEPS = 5;
const HOSTS = [1, 2, 3];
const RESULTS_FILE = resultsFile('fleet-routing');
/** The `cadre` launcher, from dist/bench/. */
const CLI = path.join(__dirname, '..', '..', 'bin', 'cadre.js');

function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

function plan(name: string, workspace: string, steps: object[]): CompiledPlan {
  const result = validatePlan({ name, workspace, steps }, { baseDir: workspace });
  if (!result.ok) throw new Error(`the benchmark plan does not validate:\n${formatIssues(result.issues)}`);
  return result.plan;
}

const chain = (workspace: string) =>
  plan('bench-routing', workspace, Array.from({ length: STEPS }, (_, i) => ({ id: `s${i}`, ...(i > 0 && { dependsOn: [`s${i - 1}`] }), local: false, tool: 'fs.read', with: { path: 'noop.txt' } })));

const short = (workspace: string) =>
  plan('bench-fleet', workspace, Array.from({ length: SHORT_STEPS }, (_, i) => ({ id: `s${i}`, ...(i > 0 && { dependsOn: [`s${i - 1}`] }), tool: 'shell', with: { command: `echo ${i}` } })));

/** `cadre worker` processes as hosts h1..hN on `taskQueue`, resolved once each says it runs. */
async function startHosts(n: number, address: string, taskQueue: string, cwd: string): Promise<ChildProcess[]> {
  return Promise.all(
    Array.from({ length: n }, (_, i) =>
      new Promise<ChildProcess>((resolve, reject) => {
        const child = spawn(process.execPath, [CLI, 'worker'], { cwd, env: { ...process.env, TEMPORAL_ADDRESS: address, CADRE_TASK_QUEUE: taskQueue, CADRE_HOST: `h${i + 1}`, CADRE_ANALYTICS: 'off' }, stdio: ['ignore', 'ignore', 'pipe'] });
        let stderr = '';
        child.stderr!.on('data', (chunk: Buffer) => {
          stderr += chunk.toString();
          if (stderr.includes('worker running')) resolve(child);
        });
        child.on('exit', (code) => reject(new Error(`cadre worker h${i + 1} exited ${code}: ${stderr}`)));
      }),
    ),
  );
}

async function stopHosts(children: ChildProcess[]): Promise<void> {
  await Promise.all(children.map((c) => new Promise((resolve) => (c.exitCode !== null ? resolve(undefined) : (c.once('exit', resolve), c.kill('SIGINT'))))));
}

async function main(): Promise<void> {
  const started = performance.now();
  installConciseLogging('WARN');
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'cadre-bench-fleet-'));
  const workspace = path.join(tmp, 'workspace');
  mkdirSync(workspace);
  writeFileSync(path.join(workspace, 'noop.txt'), 'ok');
  const server = await resolveServer({ dataDir: path.join(tmp, 'server'), ephemeral: true, log });
  try {
    await registerSearchAttributes(server, log);
    const workflowBundle = await benchWorkflowBundle(log);
    const suffix = `${process.pid}-${Date.now().toString(36)}`;
    const connection = await Connection.connect({ address: server.address });
    const client = new Client({ connection, namespace: server.namespace });
    const queues = { unrouted: `bench-unrouted-${suffix}`, routed: `bench-routed-${suffix}` };
    const unrouted = await createCadreWorker({ address: server.address, namespace: server.namespace, taskQueue: queues.unrouted, workflowBundle });
    const routed = await createCadreWorker({ address: server.address, namespace: server.namespace, taskQueue: queues.routed, workflowBundle, host: 'bench-host' });
    const steps = chain(workspace);
    let sequence = 0;
    const runOnce = async (variant: keyof typeof queues) => {
      const workflowId = `bench-${variant}-${suffix}-${++sequence}`;
      const t0 = performance.now();
      const result = await client.workflow.execute<typeof runPlan>('runPlan', { args: [{ plan: steps, inputs: {} }], taskQueue: queues[variant], workflowId });
      const wallMs = performance.now() - t0;
      if (result.steps.some((s) => s.status !== 'completed')) throw new Error(`${variant}: steps left unfinished`);
      const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events?.length ?? 0;
      return { wallMs, events };
    };
    const runs: Record<keyof typeof queues, { wallMs: number; events: number }[]> = { unrouted: [], routed: [] };
    const measure = async () => {
      for (let w = 0; w < WARMUPS; w++) for (const v of ['unrouted', 'routed'] as const) await runOnce(v);
      for (let r = 0; r < REPETITIONS; r++) {
        for (const v of r % 2 === 0 ? (['unrouted', 'routed'] as const) : (['routed', 'unrouted'] as const)) {
          const run = await runOnce(v);
          runs[v].push(run);
          log(`rep ${r + 1}/${REPETITIONS} ${v}: ${round(run.wallMs)} ms, ${run.events} events`);
        }
      }
    };
    log(`(1) routing: ${STEPS}-step chains of fs.read activities, unrouted and routed`);
    const routedRunning = routed.run();
    try {
      await unrouted.worker.runUntil(measure());
    } finally {
      routed.worker.shutdown();
      await routedRunning;
    }
    await unrouted.connection.close();
    await routed.connection.close();
    // Paired per repetition: both runs within a second or so, so the machine's drift cancels out.
    const addedMs = runs.routed.map((run, i) => run.wallMs - runs.unrouted[i].wallMs);
    const routing = {
      msPerStep: { unrouted: spread(runs.unrouted.map((r) => r.wallMs / STEPS)), routed: spread(runs.routed.map((r) => r.wallMs / STEPS)) },
      addedMsPerRun: spread(addedMs),
      addedMsPerStep: spread(addedMs.map((ms) => ms / STEPS)),
      events: { unrouted: runs.unrouted[0].events, routed: runs.routed[0].events },
      target: { addedMsPerStep: 1, of: 'median of paired differences', met: spread(addedMs.map((ms) => ms / STEPS)).median <= 1 },
    };
    log(`routing adds ${routing.addedMsPerStep.median} ms a step (median), ${routing.events.routed - routing.events.unrouted} events a run`);

    log(`(2) throughput: ${RUNS} runs of ${SHORT_STEPS} shell steps on 1, 2 and 3 hosts`);
    const throughput = [];
    const tiny = short(workspace);
    for (const hosts of HOSTS) {
      const taskQueue = `bench-fleet-${hosts}-${suffix}`;
      const children = await startHosts(hosts, server.address, taskQueue, workspace);
      try {
        const t0 = performance.now();
        const results = await Promise.all(
          Array.from({ length: RUNS }, (_, i) => client.workflow.execute<typeof runPlan>('runPlan', { args: [{ plan: tiny, inputs: {} }], taskQueue, workflowId: `bench-fleet-${hosts}-${suffix}-${i}` })),
        );
        const seconds = (performance.now() - t0) / 1000;
        const described = await Promise.all(results.map((_, i) => client.workflow.getHandle(`bench-fleet-${hosts}-${suffix}-${i}`).describe()));
        const perHost: Record<string, number> = {};
        for (const d of described) {
          const host = String(d.searchAttributes.CadreHost?.[0] ?? 'unbound');
          perHost[host] = (perHost[host] ?? 0) + 1;
        }
        throughput.push({ hosts, runs: RUNS, seconds: round(seconds), runsPerMinute: round((RUNS / seconds) * 60), runsPerHost: perHost, load1: loadAverage()[0] });
        log(`${hosts} host(s): ${RUNS} runs in ${round(seconds)} s, ${round((RUNS / seconds) * 60)} a minute, bound ${JSON.stringify(perHost)}`);
      } finally {
        await stopHosts(children);
      }
    }
    await connection.close();
    const report = { steps: STEPS, repetitions: REPETITIONS, routing, throughput, cpus: os.cpus().length, seconds: round((performance.now() - started) / 1000), node: process.version, date: new Date().toISOString() };
    writeResults(RESULTS_FILE, report);
    await writePlots(RESULTS_FILE, {
      '': groupedBars({
        title: `${RUNS} runs of ${SHORT_STEPS} shell steps at once, on 1-3 hosts of one ${os.cpus().length}-core machine`,
        yTitle: 'runs a minute',
        bars: throughput.map((t) => ({ group: `${t.hosts} host${t.hosts > 1 ? 's' : ''}`, series: 'runs a minute', value: t.runsPerMinute })),
      }),
      '-steps': groupedBars({
        title: `${STEPS}-step chain: time a step, unrouted and routed (median)`,
        yTitle: 'ms a step',
        bars: (['unrouted', 'routed'] as const).map((v) => ({ group: v, series: 'wall', value: routing.msPerStep[v].median })),
      }),
    });
  } finally {
    await server.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

runMain(main, log);
