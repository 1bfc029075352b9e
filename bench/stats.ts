/** Small statistics and machine facts the benchmarks report with their figures. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';

export const round = (value: number, digits = 1): number => Math.round(value * 10 ** digits) / 10 ** digits;

/** Nearest-rank percentile of sorted values (p in 0–100). */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export interface Percentiles {
  n: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export function percentiles(values: number[], digits = 1): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const mean = values.reduce((sum, v) => sum + v, 0) / Math.max(1, values.length);
  return { n: values.length, mean: round(mean, digits), p50: round(percentile(sorted, 50), digits), p90: round(percentile(sorted, 90), digits), p99: round(percentile(sorted, 99), digits), max: round(sorted.at(-1) ?? NaN, digits) };
}

export const mean = (values: number[]): number => values.reduce((sum, v) => sum + v, 0) / Math.max(1, values.length);

/** Least-squares slope of y over x. */
export function slope(xs: number[], ys: number[]): number {
  const mx = mean(xs);
  const my = mean(ys);
  let num = 0;
  let den = 0;
  for (let i = 0; i < xs.length; i++) {
    num += (xs[i] - mx) * (ys[i] - my);
    den += (xs[i] - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

/** The machine a figure was taken on: it is shared, so its load goes with every figure. */
export function machine() {
  let nproc: number | undefined;
  try {
    nproc = Number(execFileSync('nproc', { encoding: 'utf8' }).trim());
  } catch {
    nproc = undefined;
  }
  return { nproc: nproc ?? os.availableParallelism(), cpu: os.cpus()[0]?.model, memoryGiB: round(os.totalmem() / 1024 ** 3), loadAverage: os.loadavg().map((l) => round(l, 2)) };
}

/** CPU seconds a process has used so far (Linux: /proc/<pid>/stat), or undefined where it cannot be read. */
export function processCpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) in parentheses: utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clockTicks();
  } catch {
    return undefined;
  }
}

let ticksPerSecond: number | undefined;
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}
