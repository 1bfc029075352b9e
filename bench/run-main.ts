import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { hasPending } from '../src/analytics/spool';
import { BENCH_SCALE } from './scale';

/** How a benchmark script ends: exit 0 when it finished, 1 with the reason when it did not. */
export function runMain(main: () => Promise<void>, log: (line: string) => void): void {
  // Benchmarked runs record their analytics as every run does, into a database of their own, not
  // ~/.cadre, gone when the benchmark ends (about 20 MB each).
  if (process.env.CADRE_ANALYTICS_DIR === undefined) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-bench-analytics-'));
    process.env.CADRE_ANALYTICS_DIR = dir;
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  main().then(
    () => {
      process.exitCode = 0;
    },
    (err: unknown) => {
      log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      // Exit now: a benchmark that failed half-way may leave the SDK's runtime or a worker up, and
      // those keep the process alive (CI would wait for it until its own timeout).
      process.exit(1);
    },
  );
}

/** Where a benchmark's figures go: bench/results/<name>.json in the checkout. */
export function resultsFile(name: string): string {
  return path.join(path.resolve(__dirname, '..', '..'), 'bench', 'results', `${name}.json`);
}

/** Prints a benchmark's report as JSON and keeps it in its results file. */
export function writeResults(file: string, report: object): void {
  // Which scale ran (bench/scale.ts): CI's, or the full sizes docs/benchmarks.md quotes.
  const json = JSON.stringify({ scale: BENCH_SCALE, ...report }, null, 2);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${json}\n`);
  process.stdout.write(`${json}\n`);
}

/**
 * Waits until the worker's analytics writer has taken in every finished run. The first run of a
 * benchmark creates its (fresh) database, about 5 s of CPU once per machine: not part of what a
 * measurement that follows a warm-up should see.
 */
export async function analyticsSettled(log: (line: string) => void, timeoutMs = 60_000): Promise<void> {
  const dir = process.env.CADRE_ANALYTICS_DIR;
  if (!dir || process.env.CADRE_ANALYTICS === 'off') return;
  const deadline = Date.now() + timeoutMs;
  if (hasPending(dir)) log('waiting for the analytics writer to take in the warm-up runs...');
  while (hasPending(dir)) {
    if (Date.now() > deadline) throw new Error(`analytics parts still waiting in ${dir} after ${timeoutMs / 1000}s`);
    await sleep(100);
  }
}

/** A logger for bundleWorkflowCode that passes on only its warnings and errors. */
export const quietBundleLogger = (log: (line: string) => void) => ({
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => log(`bundle: ${message}`),
  error: (message: string) => log(`bundle: ${message}`),
  log: () => undefined,
});
