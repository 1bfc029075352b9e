/**
 * How long `cadre` takes to start, as a shell runs it: `cadre --version` (nothing but the program),
 * `cadre validate` of a small plan (the plan format loads) and `cadre list` on a dev server (the
 * client loads, connects and asks once, as `cadre status` does), each run as a new process, with
 * `node -e ''` for the floor no Node program goes under. Target: 0.2 s for `--version` and for a
 * command that asks the server (issue 38).
 *
 *   npm run bench        (TEMPORAL_ADDRESS=host:port to use an existing server)
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
import { resolveServer } from '../src/worker/dev-server';
import { registerSearchAttributes } from '../src/worker/embedded';

const RUNS = scaled(30, 10);
const TARGET_VERSION_MS = 200;
const TARGET_ASK_MS = 200;
const CADRE = path.resolve(__dirname, '..', '..', 'bin', 'cadre.js');

function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

const round = (n: number) => Math.round(n);

/** Median and max wall time of `runs` fresh processes of `args`, after one to warm the file cache. */
function timed(args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env): { medianMs: number; maxMs: number } {
  const once = () => {
    const start = performance.now();
    const done = spawnSync(process.execPath, args, { cwd, encoding: 'utf8', env });
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
    log('starting the Temporal server for cadre list...');
    const server = await resolveServer({ dataDir: path.join(dir, 'server'), ephemeral: true, log });
    let list: { medianMs: number; maxMs: number };
    try {
      await registerSearchAttributes(server, log);
      list = timed([CADRE, 'list'], dir, { ...process.env, TEMPORAL_ADDRESS: server.address, TEMPORAL_NAMESPACE: server.namespace });
    } finally {
      await server.stop();
    }
    const report = {
      benchmark: 'cli-startup',
      runs: RUNS,
      nodeFloor: node,
      version: { ...version, targetMs: TARGET_VERSION_MS, met: version.medianMs <= TARGET_VERSION_MS },
      validate,
      list: { ...list, targetMs: TARGET_ASK_MS, met: list.medianMs <= TARGET_ASK_MS },
      loadAverage: loadAverage(),
      node: process.version,
      date: new Date().toISOString(),
    };
    log(`cadre --version: median ${version.medianMs} ms (target ${TARGET_VERSION_MS}); cadre validate: ${validate.medianMs} ms; cadre list: ${list.medianMs} ms (target ${TARGET_ASK_MS}); node alone: ${node.medianMs} ms`);
    writeResults(resultsFile('cli-startup'), report);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

runMain(main, log);
