/**
 * The host side of the red team: things outside the workspace that attacks aim at, made fresh
 * for each run and looked at from outside afterwards.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { lstatSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { processesRunning, uniqueSleep } from '../support/processes';

export const random = (bytes = 8) => randomBytes(bytes).toString('hex');

/** Whether anything (a file, a directory, a dangling link) is at `p`. */
export function exists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

export function readOr(p: string, fallback = ''): string {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return fallback;
  }
}

/** A directory outside every workspace, with a file whose content no sandbox may read or change. */
export interface Outside {
  dir: string;
  victim: string;
  sentinel: string;
  /** Whether the victim still holds exactly its sentinel. */
  intact(): boolean;
  remove(): void;
}

export function outsideDir(): Outside {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-rt-outside-'));
  const victim = path.join(dir, 'victim.txt');
  const sentinel = `outside-sentinel-${random()}`;
  writeFileSync(victim, `${sentinel}\n`);
  return {
    dir,
    victim,
    sentinel,
    intact: () => readOr(victim) === `${sentinel}\n` && lstatSync(victim).nlink === 1,
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A file in the worker user's home (not a temporary directory): removed by `remove`. */
export function homeSentinel(): { file: string; sentinel: string; remove(): void } {
  const sentinel = `home-sentinel-${random()}`;
  const file = path.join(os.homedir(), `.cadre-red-team-${random(4)}`);
  writeFileSync(file, `${sentinel}\n`);
  return { file, sentinel, remove: () => rmSync(file, { force: true }) };
}

/** A host process attacks try to kill, stop or trace; its pid means nothing inside a sandbox. */
export interface Bystander {
  pid: number;
  argv: string[];
  /** Alive, not stopped, not traced. */
  unharmed(): boolean;
  stop(): void;
}

export function bystander(): Bystander {
  const argv = ['sleep', uniqueSleep(600)];
  const child: ChildProcess = spawn(argv[0], argv.slice(1), { stdio: 'ignore' });
  return {
    pid: child.pid!,
    argv,
    unharmed: () => {
      if (!processesRunning(argv).includes(child.pid!)) return false;
      const status = readOr(`/proc/${child.pid}/status`);
      return /^TracerPid:\s+0$/m.test(status) && !/^State:\s+[Tt]/m.test(status);
    },
    stop: () => void child.kill('SIGKILL'),
  };
}

/** The machine's own addresses other than loopback (IPv4 first). */
export function ownAddresses(): string[] {
  const found = Object.values(os.networkInterfaces())
    .flat()
    .filter((info) => info && !info.internal && !info.address.startsWith('fe80'))
    .map((info) => info!.address);
  return found.sort((a, b) => Number(a.includes(':')) - Number(b.includes(':')));
}
