/** Small statistics and machine readings the benchmarks share. */
import { readFileSync } from 'node:fs';
import os from 'node:os';

export const round = (value: number, digits = 1) => Number(value.toFixed(digits));

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Min, median and max, rounded. */
export function spread(values: number[], digits = 2): { min: number; median: number; max: number } {
  return { min: round(Math.min(...values), digits), median: round(median(values), digits), max: round(Math.max(...values), digits) };
}

/** Nearest-rank percentile of sorted values. */
export const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];

/** The machine's load averages (1, 5 and 15 minutes): other work on it slows what is timed. */
export const loadAverage = () => os.loadavg().map((l) => round(l, 2));

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
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
  } catch {
    return undefined;
  }
}

/** USER_HZ: /proc counts CPU time in ticks of 1/100 s on Linux. */
const CLOCK_TICKS = 100;
