/**
 * What the scale benchmarks run on: a Temporal server (an embedded dev server with cadre's settings,
 * or TEMPORAL_ADDRESS; the test dev server in the smoke test), the workflow bundle built once and
 * written to a file, a client in this process, and cadre workers in processes of their own
 * (scale-worker.ts), whose memory and CPU each report on its own.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode } from '@temporalio/worker';
import { CadreClient } from '../src/client/client';
import { resolveServer } from '../src/worker/dev-server';
import { registerSearchAttributes } from '../src/worker/embedded';
import { installConciseLogging } from '../src/worker/logging';
import { createCadreWorker } from '../src/worker/worker';
import { SAMPLE_MS, type WorkerMessage } from './scale-worker';
import { machine, round } from './stats';
import { quietBundleLogger, resultsFile, writeResults } from './run-main';
import { type Plots, writePlots } from './plot';
import { TSX } from '../test/support/tsx';

export interface ScaleEnv {
  address: string;
  namespace: string;
  /** The server's process, when this benchmark started it (its CPU time is then reported). */
  serverPid?: number;
  bundlePath: string;
  /** A scratch directory of this benchmark's, removed at the end. */
  tmp: string;
  client: CadreClient;
  log: (line: string) => void;
  /** Starts a worker on `taskQueue`: a process of its own (the benchmarks), or in this process (the smoke test). */
  startWorker(taskQueue: string, onSample?: (sample: MemorySample) => void): Promise<WorkerProcess>;
}

/** A worker's memory, and the CPU seconds it has used so far. */
export interface MemorySample {
  rssMb: number;
  heapMb: number;
  cpuSeconds: number;
}

export interface OwnedScaleEnv extends ScaleEnv {
  stop(): Promise<void>;
}

/** What a scale benchmark measured: the report to write, its plots (given the load average at the start), and why it failed, if it did. */
export interface ScaleOutcome {
  report: object;
  plots: (loadAtStart: number) => Plots;
  failure?: string;
}

/**
 * A scale benchmark's main: its own environment, `measure` at full size (or smoke size with
 * CADRE_BENCH=smoke), the report written with the scale and the machine before and after, and its
 * plots; a failure fails the run once the report is out.
 */
export async function runScaleBench(name: string, log: (line: string) => void, measure: (env: ScaleEnv, smoke: boolean) => Promise<ScaleOutcome>): Promise<void> {
  const smoke = process.env.CADRE_BENCH === 'smoke';
  const before = machine();
  const env = await startScaleEnv(name, log);
  try {
    const { report, plots, failure } = await measure(env, smoke);
    const file = resultsFile(name);
    writeResults(file, { ...report, scale: smoke ? 'smoke' : 'full', machine: { ...before, loadAverageAfter: machine().loadAverage }, node: process.version, date: new Date().toISOString() });
    await writePlots(file, plots(before.loadAverage[0]));
    if (failure) throw new Error(failure);
  } finally {
    await env.stop();
  }
}

/** A server of the benchmark's own (or TEMPORAL_ADDRESS's), cadre's workflows bundled once, a client. */
export async function startScaleEnv(name: string, log: (line: string) => void): Promise<OwnedScaleEnv> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), `cadre-bench-${name}-`));
  log('starting the Temporal server...');
  const server = await resolveServer({ dataDir: path.join(tmp, 'server'), ephemeral: true, log });
  try {
    await registerSearchAttributes(server, log);
    log('bundling workflows...');
    const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('../src/workflows'), logger: quietBundleLogger(log) });
    const bundlePath = path.join(tmp, 'workflow-bundle.js');
    writeFileSync(bundlePath, code);
    const client = await CadreClient.connect({ address: server.address, namespace: server.namespace });
    const env: OwnedScaleEnv = {
      address: server.address,
      namespace: server.namespace,
      ...(server.pid !== undefined && { serverPid: server.pid }),
      bundlePath,
      tmp,
      client,
      log,
      startWorker: (taskQueue, onSample) => startWorkerProcess(env, taskQueue, onSample),
      async stop() {
        await client.close();
        await server.stop();
        rmSync(tmp, { recursive: true, force: true });
      },
    };
    return env;
  } catch (err) {
    await server.stop();
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

/**
 * The test dev server and bundle (test/support/global-setup.ts), for the smoke test, with workers in
 * the test's own process: a worker process from source (tsx) takes seconds of CPU to start, which
 * `npm test` cannot spend four times over. The process path is what every full run takes.
 */
export async function testScaleEnv(log: (line: string) => void): Promise<OwnedScaleEnv> {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'cadre-bench-smoke-'));
  const address = process.env.CADRE_TEST_ADDRESS as string;
  const namespace = process.env.CADRE_TEST_NAMESPACE ?? 'default';
  const client = await CadreClient.connect({ address, namespace });
  const bundlePath = process.env.CADRE_TEST_BUNDLE as string;
  return {
    address,
    namespace,
    bundlePath,
    tmp,
    client,
    log,
    startWorker: (taskQueue, onSample) => startWorkerHere({ address, namespace, bundlePath, auditDir: path.join(tmp, 'audit') }, taskQueue, onSample),
    async stop() {
      await client.close();
      rmSync(tmp, { recursive: true, force: true });
    },
  };
}

export interface WorkerReport {
  pid: number;
  peakRssMb: number;
  cpuSeconds: number;
}

export interface WorkerProcess {
  pid: number;
  /** CPU seconds the process has used so far. */
  cpuSeconds(): Promise<number>;
  /** Stops the worker (running tasks finish) and resolves with its figures. */
  stop(): Promise<WorkerReport>;
  /** Ends the process at once (after a failure). */
  kill(): void;
}

const MB = 1024 * 1024;
const cpuSecondsHere = () => {
  const cpu = process.cpuUsage();
  return (cpu.user + cpu.system) / 1e6;
};
const memorySample = (): MemorySample => {
  const memory = process.memoryUsage();
  return { rssMb: memory.rss / MB, heapMb: memory.heapUsed / MB, cpuSeconds: cpuSecondsHere() };
};

/** A worker in this process (the smoke test): its figures are the whole process's. */
async function startWorkerHere(where: { address: string; namespace: string; bundlePath: string; auditDir: string }, taskQueue: string, onSample?: (sample: MemorySample) => void): Promise<WorkerProcess> {
  installConciseLogging('ERROR');
  const { worker, connection } = await createCadreWorker({ ...where, taskQueue, workflowBundle: { codePath: where.bundlePath } });
  const running = worker.run();
  onSample?.(memorySample());
  const sampler = setInterval(() => onSample?.(memorySample()), SAMPLE_MS);
  const stop = async (): Promise<WorkerReport> => {
    clearInterval(sampler);
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running;
    await connection.close();
    return { pid: process.pid, peakRssMb: round(process.resourceUsage().maxRSS / 1024), cpuSeconds: round(cpuSecondsHere(), 2) };
  };
  return { pid: process.pid, cpuSeconds: async () => cpuSecondsHere(), stop, kill: () => void stop().catch(() => undefined) };
}

/** Starts a worker process on `taskQueue` and resolves once it polls; `onSample` gets its memory every second. */
export function startWorkerProcess(env: ScaleEnv, taskQueue: string, onSample?: (sample: MemorySample) => void): Promise<WorkerProcess> {
  // From source (tsx) the child needs tsx's loader too.
  const script = path.join(__dirname, `scale-worker${path.extname(__filename)}`);
  const child: ChildProcess = fork(script, [taskQueue], {
    execArgv: script.endsWith('.ts') ? ['--import', TSX] : [],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: {
      ...process.env,
      CADRE_BENCH_ADDRESS: env.address,
      CADRE_BENCH_NAMESPACE: env.namespace,
      CADRE_BENCH_BUNDLE: env.bundlePath,
      CADRE_BENCH_AUDIT_DIR: path.join(env.tmp, 'audit'),
    },
  });
  const pid = child.pid as number;
  let done: ((report: WorkerReport) => void) | undefined;
  let failed: ((err: Error) => void) | undefined;
  const finished = new Promise<WorkerReport>((resolve, reject) => {
    done = resolve;
    failed = reject;
  });
  // Nobody may be waiting for `finished` yet: a failure is seen through `ready` or `stop`.
  finished.catch(() => undefined);
  const cpuAsked: ((seconds: number) => void)[] = [];
  const cpuSeconds = () => new Promise<number>((resolve) => (cpuAsked.push(resolve), child.send('cpu')));
  return new Promise((resolve, reject) => {
    child.on('message', (message: WorkerMessage) => {
      if (message.type === 'ready') resolve({ pid, cpuSeconds, stop: () => (child.send('stop'), finished), kill: () => child.kill('SIGKILL') });
      else if (message.type === 'sample') onSample?.(message);
      else if (message.type === 'cpu') cpuAsked.shift()?.(message.cpuSeconds);
      else if (message.type === 'done') done?.({ pid, peakRssMb: round(message.peakRssMb), cpuSeconds: round(message.cpuSeconds, 2) });
    });
    child.once('exit', (code, signal) => {
      const err = new Error(`worker process ${pid} exited (${code ?? signal}) before it reported`);
      reject(err);
      failed?.(err);
    });
  });
}

/** Runs `work` with `count` worker processes polling `taskQueue`; resolves with its result and their figures. */
export async function withWorkerProcesses<T>(env: ScaleEnv, count: number, taskQueue: string, work: (workers: WorkerProcess[]) => Promise<T>, onSample?: (worker: number, sample: MemorySample) => void): Promise<{ result: T; workers: WorkerReport[] }> {
  const workers: WorkerProcess[] = [];
  try {
    for (let i = 0; i < count; i++) workers.push(await env.startWorker(taskQueue, onSample && ((sample) => onSample(i, sample))));
    const result = await work([...workers]);
    return { result, workers: await Promise.all(workers.splice(0).map((w) => w.stop())) };
  } finally {
    for (const w of workers) w.kill();
  }
}

/** A directory of the benchmark's own under its scratch directory. */
export function scratch(env: ScaleEnv, name: string): string {
  const dir = path.join(env.tmp, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

const EventType = temporal.api.enums.v1.EventType;

/** Workflow tasks that timed out or failed in these histories: work a busy worker lost and did again. */
export function lostWorkflowTasks(histories: temporal.api.history.v1.IHistoryEvent[][]): { timedOut: number; failed: number } {
  let timedOut = 0;
  let failed = 0;
  for (const events of histories) {
    for (const event of events) {
      if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT) timedOut++;
      else if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED) failed++;
    }
  }
  return { timedOut, failed };
}
