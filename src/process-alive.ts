import { readFileSync } from 'node:fs';
import os from 'node:os';

/** Whether a process lives (signal 0 checks without sending; EPERM means it lives as another user). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether `name`, `<prefix><pid>` or `<prefix><pid>-…`, was left by a process that has ended (never
 * this one's): what a process makes under its pid and removes as it exits, found after a SIGKILL.
 */
export function leftByEndedProcess(name: string, prefix: string): boolean {
  if (!name.startsWith(prefix)) return false;
  const pid = Number(/^(\d+)(?:-|$)/.exec(name.slice(prefix.length))?.[1]);
  return Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && !isAlive(pid);
}

/** A process, named so that a later one given the same pid (or a process after a reboot) is not taken for it. */
export interface ProcessIdentity {
  host: string;
  /** The kernel's boot id; empty where /proc has none. */
  boot: string;
  pid: number;
  /** When it started, in clock ticks since boot (/proc/<pid>/stat); empty where /proc has none. */
  start: string;
}

let me: ProcessIdentity | undefined;

export function thisProcess(): ProcessIdentity {
  if (me?.pid !== process.pid) me = { host: os.hostname(), boot: bootId(), pid: process.pid, start: startOf(process.pid) };
  return me;
}

/**
 * Whether the process named lives: true for one on another host, which this one cannot see (the
 * caller must not take it for dead).
 */
export function isProcessAlive(who: ProcessIdentity): boolean {
  if (who.host !== os.hostname()) return true;
  if (who.boot !== bootId()) return false;
  return isAlive(who.pid) && startOf(who.pid) === who.start;
}

function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return '';
  }
}

function startOf(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 22; the fields before it follow the command name, which may hold spaces and parentheses.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}
