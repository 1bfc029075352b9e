/**
 * A cadre worker in a process of its own, for the scale benchmarks (started by scale-env.ts with
 * an IPC channel): its memory and CPU are the worker's alone, not the client's that drives it, and a
 * second one is a second worker as production would run it.
 *
 *   node dist/bench/scale-worker.js <taskQueue>   (env: CADRE_BENCH_ADDRESS, CADRE_BENCH_NAMESPACE,
 *                                                  CADRE_BENCH_BUNDLE, CADRE_BENCH_AUDIT_DIR)
 *
 * Messages to the parent: `ready` once it polls; `sample` every SAMPLE_MS (RSS, heap, CPU seconds so far); `cpu` (its
 * CPU seconds so far) when asked with `cpu`; `done` after the parent's `stop`, with its peak RSS and CPU time.
 */
import { installConciseLogging } from '../src/worker/logging';
import { createCadreWorker } from '../src/worker/worker';

export const SAMPLE_MS = 1000;
const MB = 1024 * 1024;

export type WorkerMessage =
  | { type: 'ready' }
  | { type: 'sample'; rssMb: number; heapMb: number; cpuSeconds: number }
  | { type: 'cpu'; cpuSeconds: number }
  | { type: 'done'; peakRssMb: number; cpuSeconds: number };

function send(message: WorkerMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) return resolve();
    process.send(message, undefined, undefined, () => resolve());
  });
}

function cpuSeconds(): number {
  const cpu = process.cpuUsage();
  return (cpu.user + cpu.system) / 1e6;
}

async function main(): Promise<void> {
  // Chunks of local activities hold workflow tasks open for seconds, which the SDK warns about: expected here.
  installConciseLogging('ERROR');
  const { worker, connection } = await createCadreWorker({
    address: process.env.CADRE_BENCH_ADDRESS as string,
    namespace: process.env.CADRE_BENCH_NAMESPACE ?? 'default',
    taskQueue: process.argv[2],
    workflowBundle: { codePath: process.env.CADRE_BENCH_BUNDLE as string },
    ...(process.env.CADRE_BENCH_AUDIT_DIR && { auditDir: process.env.CADRE_BENCH_AUDIT_DIR }),
  });
  const running = worker.run();
  const sample = () => {
    const memory = process.memoryUsage();
    void send({ type: 'sample', rssMb: memory.rss / MB, heapMb: memory.heapUsed / MB, cpuSeconds: cpuSeconds() });
  };
  const sampler = setInterval(sample, SAMPLE_MS);
  process.on('message', (message) => {
    if (message === 'stop' && worker.getState() === 'RUNNING') worker.shutdown();
    if (message === 'cpu') void send({ type: 'cpu', cpuSeconds: cpuSeconds() });
  });
  // The parent went away without a word: stop, do not linger.
  process.on('disconnect', () => {
    if (worker.getState() === 'RUNNING') worker.shutdown();
  });
  await send({ type: 'ready' });
  sample();
  await running;
  clearInterval(sampler);
  await connection.close();
  await send({ type: 'done', peakRssMb: process.resourceUsage().maxRSS / 1024, cpuSeconds: cpuSeconds() });
  process.exit(0);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`scale worker: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  });
}
