/**
 * Finding a tool's processes from outside: commands run in the sandbox's own PID namespace, so a
 * PID they print means nothing here. Tests give each process arguments no other has (`sleep 300.4711`)
 * and look for them in /proc.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Arguments unique to this test process and call: `sleep ${uniqueSleep()}` sleeps about 300 s. */
export function uniqueSleep(seconds = 300): string {
  return `${seconds}.${process.pid}${String(Date.now() % 100000).padStart(5, '0')}${Math.floor(Math.random() * 1000)}`;
}

/** Live (not zombie) processes whose arguments are exactly `argv`. */
export function processesRunning(argv: string[]): number[] {
  const wanted = `${argv.join('\0')}\0`;
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => read(`/proc/${pid}/cmdline`) === wanted && state(pid) !== 'Z')
    .map(Number);
}

/** Whether a process runs (a zombie, dead and not yet reaped by whoever inherited it, does not). */
export const processAlive = (pid: number): boolean => {
  const s = state(String(pid));
  return s !== undefined && s !== 'Z';
};

/** Waits until `count(pids)` holds, polling /proc. */
export async function untilProcesses(argv: string[], test: (pids: number[]) => boolean, timeoutMs: number): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pids = processesRunning(argv);
    if (test(pids)) return pids;
    if (Date.now() > deadline) throw new Error(`processes ${argv.join(' ')}: ${pids.length} still there after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function state(pid: string): string | undefined {
  const text = read(`/proc/${pid}/stat`);
  return text ? text.slice(text.lastIndexOf(')') + 2).split(' ')[0] : undefined;
}

function read(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
