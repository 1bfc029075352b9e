/** Small statistics and machine readings the benchmarks share. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { temporal } from '@temporalio/proto';

/** A protobuf timestamp (seconds as a Long or a number) in milliseconds, its sub-millisecond part kept: the SDK's tsToMs floors it, which biases sums of short workflow tasks. */
export const timestampMs = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number => Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;

/** A history event's server time, in milliseconds with their fraction. */
export const eventMs = (event: temporal.api.history.v1.IHistoryEvent): number => timestampMs(event.eventTime);

export const round = (value: number, digits = 1) => Number(value.toFixed(digits));

export const mean = (values: number[]): number => values.reduce((sum, v) => sum + v, 0) / Math.max(1, values.length);

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Min, median and max, rounded. */
export function spread(values: number[], digits = 2): { min: number; median: number; max: number } {
  return { min: round(Math.min(...values), digits), median: round(median(values), digits), max: round(Math.max(...values), digits) };
}

/** Nearest-rank percentile of sorted values (p in 0–100). */
export const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];

/** The same, NaN for no values. */
export const percentile = (sorted: number[], p: number): number => (sorted.length === 0 ? NaN : pct(sorted, p));

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
  return { n: values.length, mean: round(mean(values), digits), p50: round(percentile(sorted, 50), digits), p90: round(percentile(sorted, 90), digits), p99: round(percentile(sorted, 99), digits), max: round(sorted.at(-1) ?? NaN, digits) };
}

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

/** The machine's load averages (1, 5 and 15 minutes): other work on it slows what is timed. */
export const loadAverage = () => os.loadavg().map((l) => round(l, 2));

/** The machine a figure was taken on: it is shared, so its load goes with every figure. */
export function machine() {
  return { nproc: os.availableParallelism(), cpu: os.cpus()[0]?.model, memoryGiB: round(os.totalmem() / 1024 ** 3), loadAverage: loadAverage() };
}

/** CPU time this process has used (every thread: main, workflow threads, the SDK's core), in ms. */
export function processCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/** CPU time another process has used (user + system, from /proc), in ms; undefined where it cannot be read. */
export function pidCpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    // Fields after the command name (which may hold spaces, so split after its closing parenthesis): utime is the 12th, stime the 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks();
  } catch {
    return undefined;
  }
}

/** The same in seconds. */
export function processCpuSeconds(pid: number | undefined): number | undefined {
  const ms = pidCpuMs(pid);
  return ms === undefined ? undefined : ms / 1000;
}

let ticksPerSecond: number | undefined;
/** USER_HZ, the unit of /proc's CPU times: 100 on Linux unless getconf says otherwise. */
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
