/** Shared pieces of the workflow tests: a worker on a fresh task queue, a client, plan compilation. */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { installConciseLogging } from '../../src/worker/logging';
import YAML from 'yaml';
import { CadreClient } from '../../src/client/client';
import { NoWorkerAnswered } from '../../src/client/run-diagnostics';
import type { CompiledPlan } from '../../src/plan-format/types';
import { formatIssues, validatePlan } from '../../src/plan-format/validate';
import type { Diagnostics } from '../../src/protocol/definitions';
import { type CadreWorkerOptions, createCadreWorker } from '../../src/worker/worker';

let counter = 0;

export function uniqueId(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

export function tempWorkspace(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'cadre-ws-'));
}

export function compile(yaml: string, workspace: string): CompiledPlan {
  const result = validatePlan(YAML.parse(yaml), { baseDir: workspace });
  if (!result.ok) throw new Error(formatIssues(result.issues));
  return result.plan;
}

export interface Harness {
  client: CadreClient;
  taskQueue: string;
}

/** What a test may give its worker: model settings, an audit directory, another server (default the test run's). */
export type WorkerSetup = Pick<CadreWorkerOptions, 'activityDeps' | 'auditDir' | 'overrides'> & { address?: string };

export async function startWorker(taskQueue: string, setup: WorkerSetup = {}): Promise<{ worker: Worker; connection: NativeConnection }> {
  // Failed attempts are expected in these tests and asserted on; keep worker logs to errors.
  installConciseLogging('ERROR');
  return createCadreWorker({
    address: setup.address ?? (process.env.CADRE_TEST_ADDRESS as string),
    namespace: process.env.CADRE_TEST_NAMESPACE as string,
    taskQueue,
    workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string },
    // Tests write audit logs to a temporary directory unless they name one.
    auditDir: setup.auditDir ?? path.join(os.tmpdir(), 'cadre-test-audit'),
    ...(setup.activityDeps && { activityDeps: setup.activityDeps }),
    ...(setup.overrides && { overrides: setup.overrides }),
  });
}

/** A worker and a client a whole test file shares (beforeAll), and how to stop both (afterAll). */
export async function sharedWorker(prefix: string, setup: WorkerSetup = {}): Promise<{ h: Harness; stop: () => Promise<void> }> {
  const taskQueue = uniqueId(prefix);
  const { worker, connection } = await startWorker(taskQueue, setup);
  const running = worker.run();
  const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
  const stop = async () => {
    worker.shutdown();
    await running;
    await client.close();
    await connection.close();
  };
  return { h: { client, taskQueue }, stop };
}

/**
 * `withWorker` for the tests of one file that need nothing of their own in a worker: one worker,
 * made before the file's first test and stopped after its last, for all of them. A worker costs
 * about 0.45 s of CPU to make (its workflow thread loads the SDK and the bundle again), and CI's
 * minutes are CPU. Call it at the top of the file (it registers beforeAll and afterAll).
 */
export function fileWorker(prefix: string): <T>(fn: (h: Harness) => Promise<T>) => Promise<T> {
  let shared: Awaited<ReturnType<typeof sharedWorker>> | undefined;
  beforeAll(async () => {
    shared = await sharedWorker(prefix);
  }, 60_000);
  afterAll(async () => {
    await shared?.stop();
  });
  return (fn) => {
    if (!shared) throw new Error("fileWorker: the file's worker did not start (see beforeAll's failure)");
    return fn(shared.h);
  };
}

/** Runs `fn` while a worker polls a task queue of its own. */
export async function withWorker<T>(fn: (h: Harness) => Promise<T>, setup: WorkerSetup = {}): Promise<T> {
  const taskQueue = uniqueId('tq');
  const { worker, connection } = await startWorker(taskQueue, setup);
  const client = await CadreClient.connect({ address: setup.address ?? process.env.CADRE_TEST_ADDRESS });
  try {
    return await worker.runUntil(fn({ client, taskQueue }));
  } finally {
    await client.close();
    await connection.close();
  }
}

export async function startPlan(h: Harness, plan: CompiledPlan, inputs: Record<string, unknown> = {}): Promise<string> {
  const { workflowId } = await h.client.start(plan, inputs, { workflowId: uniqueId(plan.name), taskQueue: h.taskQueue });
  return workflowId;
}

/**
 * Polls diagnostics until `test` holds (the run's own state, not a sleep). A query no worker
 * answered in time (a loaded machine: fifty runs' first tasks at once) is asked again until the
 * deadline, which ends the wait with it.
 */
export async function waitUntil(h: Harness, workflowId: string, test: (d: Diagnostics) => boolean, timeoutMs = 60_000): Promise<Diagnostics> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let d: Diagnostics;
    try {
      d = await h.client.diagnostics(workflowId);
    } catch (err) {
      if (!(err instanceof NoWorkerAnswered) || Date.now() > deadline) throw err;
      continue;
    }
    if (test(d)) return d;
    if (Date.now() > deadline) throw new Error(`condition not reached; last diagnostics: ${JSON.stringify(d, null, 2)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export function step(d: Diagnostics, id: string) {
  const record = d.steps.find((s) => s.id === id);
  if (!record) throw new Error(`no step ${id}`);
  return record;
}

/** A worker in a process of its own (`worker-process.ts`), so a test can SIGKILL it; resolves once it polls. */
export async function startWorkerProcess(taskQueue: string, env: NodeJS.ProcessEnv = {}): Promise<ChildProcess> {
  const child = spawnWorkerProcess(taskQueue, env, false);
  await printed(child, 'ready');
  return child;
}

export interface HeldWorkerProcess {
  child: ChildProcess;
  /** Sets it polling; resolves once it polls. */
  run(): Promise<ChildProcess>;
}

/**
 * A worker process started ahead of need: it connects and loads its workflows, then waits without
 * polling until `run()`. A test that kills worker after worker prepares the next one meanwhile, so
 * it takes over as soon as the last one is dead rather than a process start later.
 */
export async function prepareWorkerProcess(taskQueue: string, env: NodeJS.ProcessEnv = {}): Promise<HeldWorkerProcess> {
  const child = spawnWorkerProcess(taskQueue, env, true);
  await printed(child, 'created');
  return {
    child,
    run: async () => {
      child.stdin!.end('run\n');
      await printed(child, 'ready');
      return child;
    },
  };
}

function spawnWorkerProcess(taskQueue: string, env: NodeJS.ProcessEnv, held: boolean): ChildProcess {
  // Compiled by the test run's setup (./build.ts): a worker started after a kill is ready sooner.
  const child = spawn(process.execPath, [path.join(__dirname, '..', '..', 'dist', 'test', 'support', 'worker-process.js'), taskQueue], {
    stdio: [held ? 'pipe' : 'ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env, ...(held && { CADRE_TEST_WORKER_HOLD: '1' }) },
  });
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    child.emit('printed', stdout);
  });
  return child;
}

/** Resolves once the worker process has printed `word`; fails if it exits first. */
function printed(child: ChildProcess, word: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`worker process exited early (${code})`));
    const onPrinted = (stdout: string) => {
      if (!stdout.split('\n').includes(word)) return;
      child.off('printed', onPrinted);
      child.off('exit', onExit);
      resolve();
    };
    child.on('printed', onPrinted);
    child.once('exit', onExit);
  });
}

export function kill(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}
