/**
 * `npm run bench`: every benchmark of this set, one process each (a benchmark's worker and server
 * end with it), in turn, stopping at the first that fails; then how long each took. `--ci` runs
 * the ones CI's 12 minutes (shared with the tests and the fleet test) hold: plan overhead, which
 * also runs the benchmarks' own workers and bare workflows, and the cheap ones. `npm run bench`
 * runs them all; whoever works on a target runs its benchmark.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const BENCHMARKS = ['plan-overhead', 'history-limits', 'worktrees', 'code-navigation', 'sessions', 'team-signals', 'team-example', 'sandbox', 'streaming', 'cli-startup'];
const IN_CI = new Set(['plan-overhead', 'sandbox', 'cli-startup']);

const chosen = process.argv.includes('--ci') ? BENCHMARKS.filter((name) => IN_CI.has(name)) : BENCHMARKS;

const took: [string, number][] = [];
let failed: string | undefined;
for (const name of chosen) {
  const started = performance.now();
  const { status, signal } = spawnSync(process.execPath, [path.join(__dirname, `${name}.js`)], { stdio: 'inherit' });
  took.push([name, (performance.now() - started) / 1000]);
  if (status !== 0) {
    failed = `${name} ${signal ? `was killed by ${signal}` : `exited ${status}`}`;
    break;
  }
}
process.stderr.write(`\nbenchmarks ${failed ? `stopped: ${failed}` : 'done'}:\n`);
for (const [name, seconds] of took) process.stderr.write(`${seconds.toFixed(1).padStart(7)} s  ${name}\n`);
process.stderr.write(`${took.reduce((sum, [, s]) => sum + s, 0).toFixed(1).padStart(7)} s  total\n`);
process.exitCode = failed ? 1 : 0;
