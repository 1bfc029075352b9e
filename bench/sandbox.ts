/**
 * What the sandbox costs a `shell` call: the same command through the tool, sandboxed (bubblewrap,
 * the default profile) and unsandboxed (`sandbox: none`), interleaved on one machine; plus bare
 * bubblewrap and a bare `/bin/sh`, for scale.
 *
 *   npm run bench        (no Temporal server needed: the tool's own function)
 *
 * Prints one JSON object and writes it to bench/results/sandbox.json, and the four distributions of
 * call times to bench/results/sandbox.svg. The target (a sandboxed call
 * adds at most 20 ms at the median) is reported, not enforced: wall times vary with the machine's load.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { INLINE_OUTPUT_LIMITS, defaultToolSandbox } from '../src/activities/tools/context';
import { runTool } from '../src/activities/tools/run-tool';
import { bubblewrapAvailability } from '../src/sandbox/bubblewrap';
import type { SandboxProfile } from '../src/sandbox/profile';
import { distribution, writePlot } from './plot';
import { resultsFile, runMain, writeResults } from './run-main';

const CALLS = 60;
const WARMUP = 5;
const TARGET_OVERHEAD_MS = 20;
const COMMAND = 'echo hello';

function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
function stats(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { min: round(sorted[0]), median: round(at(0.5)), p95: round(at(0.95)), max: round(sorted[sorted.length - 1]) };
}

/** A call's wall time, and the longest the worker's event loop stood still during it (what every other activity and workflow task of the worker waits out). */
async function timedCall(workspace: string, profile: SandboxProfile): Promise<{ ms: number; stallMs: number }> {
  const sandbox = { ...defaultToolSandbox(), profile };
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const start = performance.now();
  await runTool('shell', { command: COMMAND }, { workspace, stepId: 'bench', attempt: 1, signal: new AbortController().signal, limits: INLINE_OUTPUT_LIMITS, sandbox });
  const ms = performance.now() - start;
  loop.disable();
  return { ms, stallMs: loop.max / 1e6 };
}

function timedSpawn(file: string, args: string[]): number {
  const start = performance.now();
  const done = spawnSync(file, args);
  if (done.status !== 0) throw new Error(`${file} failed: ${done.stderr.toString()}`);
  return performance.now() - start;
}

async function main(): Promise<void> {
  const available = bubblewrapAvailability();
  if (!available.ok) throw new Error(available.reason);
  const workspace = mkdtempSync(path.join(os.tmpdir(), 'cadre-bench-sandbox-'));
  try {
    const sandboxed = defaultToolSandbox().profile;
    const unsandboxed: SandboxProfile = { ...sandboxed, mode: 'none' };
    const load = os.loadavg()[0];
    const times = { sandboxed: [] as number[], unsandboxed: [] as number[], bwrap: [] as number[], sh: [] as number[] };
    const stalls = { sandboxed: [] as number[], unsandboxed: [] as number[] };
    for (let i = 0; i < WARMUP + CALLS; i++) {
      // Interleaved, so the machine's load falls on both alike.
      const pair = [await timedCall(workspace, sandboxed), await timedCall(workspace, unsandboxed)];
      const bare = [timedSpawn(available.bwrap, ['--unshare-all', '--unshare-user', '--die-with-parent', '--ro-bind', '/', '/', '--', '/bin/true']), timedSpawn('/bin/sh', ['-c', 'true'])];
      if (i < WARMUP) continue;
      times.sandboxed.push(pair[0].ms);
      times.unsandboxed.push(pair[1].ms);
      stalls.sandboxed.push(pair[0].stallMs);
      stalls.unsandboxed.push(pair[1].stallMs);
      times.bwrap.push(bare[0]);
      times.sh.push(bare[1]);
    }
    const overheads = times.sandboxed.map((t, i) => t - times.unsandboxed[i]);
    const overhead = stats(overheads);
    const report = {
      benchmark: 'sandbox',
      command: COMMAND,
      calls: CALLS,
      machine: { cpus: os.cpus().length, node: process.version, loadAverage: [round(load, 2), round(os.loadavg()[0], 2)] },
      ms: { sandboxed: stats(times.sandboxed), unsandboxed: stats(times.unsandboxed), bareBwrap: stats(times.bwrap), bareSh: stats(times.sh) },
      overheadMs: overhead,
      eventLoopStallMs: { sandboxed: stats(stalls.sandboxed), unsandboxed: stats(stalls.unsandboxed) },
      target: { overheadMedianMs: TARGET_OVERHEAD_MS, met: overhead.median <= TARGET_OVERHEAD_MS },
    };
    log(`sandboxed ${report.ms.sandboxed.median} ms, unsandboxed ${report.ms.unsandboxed.median} ms (medians): overhead ${overhead.median} ms (p95 ${overhead.p95}), target ≤ ${TARGET_OVERHEAD_MS} ms; the event loop stood still up to ${report.eventLoopStallMs.sandboxed.median} ms a sandboxed call (median)`);
    const file = resultsFile('sandbox');
    writeResults(file, report);
    await writePlot(
      file.replace(/\.json$/, '.svg'),
      distribution({
        title: `\`${COMMAND}\` through the shell tool, ${CALLS} calls each, interleaved (load ${round(load, 1)})`,
        xTitle: 'ms a call',
        logX: true,
        series: { 'runTool, sandboxed': times.sandboxed, 'runTool, sandbox: none': times.unsandboxed, 'bare bwrap': times.bwrap, 'bare sh': times.sh },
      }),
    );
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

runMain(main, log);
