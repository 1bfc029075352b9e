/**
 * How long `cadre` takes to start, as a shell runs it: `cadre --version` (nothing but the program)
 * and `cadre validate` of a small plan (the plan format loads), each run as a new process, with
 * `node -e ''` for the floor no Node program goes under. Target: `--version` within 0.2 s.
 *
 *   npm run bench        (no Temporal server needed)
 *
 * Prints one JSON object and writes it to bench/results/cli-startup.json. The target is reported,
 * not enforced: wall times vary with the machine's load.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { scaled } from './scale';
import { loadAverage } from './stats';
import { resultsFile, runMain, writeResults } from './run-main';

const RUNS = scaled(30, 10);
const TARGET_VERSION_MS = 200;
const CADRE = path.resolve(__dirname, '..', '..', 'bin', 'cadre.js');

function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

const round = (n: number) => Math.round(n);

/** Median and max wall time of `runs` fresh processes of `args`, after one to warm the file cache. */
function timed(args: string[], cwd: string): { medianMs: number; maxMs: number } {
  const once = () => {
    const start = performance.now();
    const done = spawnSync(process.execPath, args, { cwd, encoding: 'utf8' });
    if (done.status !== 0) throw new Error(`node ${args.join(' ')} exited ${done.status}: ${done.stderr}`);
    return performance.now() - start;
  };
  once();
  const times = Array.from({ length: RUNS }, once).sort((a, b) => a - b);
  return { medianMs: round(times[Math.floor(times.length / 2)]), maxMs: round(times[times.length - 1]) };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-bench-cli-'));
  try {
    writeFileSync(path.join(dir, 'plan.yaml'), 'name: hello\nsteps:\n  - { id: hi, tool: shell, with: { command: "echo hi" } }\n');
    log(`${RUNS} starts of each...`);
    const node = timed(['-e', ''], dir);
    const version = timed([CADRE, '--version'], dir);
    const validate = timed([CADRE, 'validate', 'plan.yaml'], dir);
    const report = {
      benchmark: 'cli-startup',
      runs: RUNS,
      nodeFloor: node,
      version: { ...version, targetMs: TARGET_VERSION_MS, met: version.medianMs <= TARGET_VERSION_MS },
      validate,
      loadAverage: loadAverage(),
      node: process.version,
      date: new Date().toISOString(),
    };
    log(`cadre --version: median ${version.medianMs} ms (target ${TARGET_VERSION_MS}); cadre validate: ${validate.medianMs} ms; node alone: ${node.medianMs} ms`);
    writeResults(resultsFile('cli-startup'), report);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

runMain(main, log);
