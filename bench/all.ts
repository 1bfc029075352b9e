/**
 * `npm run bench`: every benchmark of this set, one process each (a benchmark's worker and server
 * end with it), in turn, stopping at the first that fails; then how long each took. `--ci` runs
 * the ones CI's 12 minutes (shared with the tests) hold: those whose targets are still worked on,
 * and the cheap ones. The others' targets are met and their behaviour is held by tests at a smaller
 * scale (run-limits, worktree-plans, sessions, teams, streaming); `npm run bench` runs them all.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';

const BENCHMARKS = ['plan-overhead', 'history-limits', 'worktrees', 'code-navigation', 'sessions', 'team-signals', 'team-example', 'sandbox', 'streaming', 'cli-startup'];
const IN_CI = new Set(['plan-overhead', 'code-navigation', 'team-signals', 'sandbox', 'cli-startup']);

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
