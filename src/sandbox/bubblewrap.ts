/**
 * bubblewrap (Debian's `bubblewrap` package): the OS boundary every tool process runs behind.
 * New user, PID, IPC, UTS, cgroup and network namespaces, no capabilities, no nested user
 * namespaces, its own session (no terminal injection), killed with its parent.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import type { Mount } from './mounts';
import type { ResourceLimits } from './profile';

export const INSTALL_HINT = 'apt-get install bubblewrap';

/** Where bwrap is and whether it can make namespaces here, or why not: found once per process. */
export type Availability = { ok: true; bwrap: string; prlimit?: string } | { ok: false; reason: string };

let availability: Availability | undefined;

export function bubblewrapAvailability(): Availability {
  availability ??= probe();
  return availability;
}

function probe(): Availability {
  const bwrap = onPath('bwrap');
  if (!bwrap) return { ok: false, reason: `bubblewrap (bwrap) is not installed on worker ${hostname()}: ${INSTALL_HINT}, or set sandbox: none (docs/security.md)` };
  const tried = spawnSync(bwrap, ['--unshare-all', '--unshare-user', '--die-with-parent', '--ro-bind', '/', '/', '--', '/bin/true'], { encoding: 'utf8', timeout: 10_000 });
  if (tried.status !== 0) {
    const said = (tried.stderr || tried.error?.message || `exit ${String(tried.status)}`).trim().split('\n')[0];
    return {
      ok: false,
      reason: `bubblewrap cannot create namespaces on worker ${hostname()} (${said}): allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0), or set sandbox: none (docs/security.md)`,
    };
  }
  const prlimit = onPath('prlimit');
  return { ok: true, bwrap, ...(prlimit && { prlimit }) };
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH || '/usr/local/bin:/usr/bin:/bin').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

export interface BwrapCommand {
  mounts: Mount[];
  cwd: string;
  env: Record<string, string>;
  limits: ResourceLimits;
  /** The program and its arguments, inside. */
  argv: string[];
  prlimit?: string;
  /** The fd the launcher opens the seccomp filter on (seccomp.ts). */
  seccompFd?: number;
}

/** What a root process could still read of the host through /proc: the kernel's memory, keys, log and timers. */
const PROC_MASKS = ['/proc/kcore', '/proc/keys', '/proc/kmsg', '/proc/timer_list', '/proc/sched_debug', '/proc/latency_stats'].filter((file) => existsSync(file));

/**
 * bwrap's arguments. The environment goes in as --setenv after --clearenv: bwrap and the host-side
 * helpers run with none of it (a model's LD_PRELOAD must never reach a process outside).
 */
export function bwrapArgs(command: BwrapCommand): string[] {
  const args = [
    '--die-with-parent',
    '--new-session',
    '--unshare-all',
    '--unshare-user',
    '--disable-userns',
    '--cap-drop',
    'ALL',
    '--hostname',
    'sandbox',
    '--proc',
    '/proc',
    // Its own processes only, and read-only: as root, /proc/sys (core_pattern!) and sysrq-trigger would reach the host.
    '--remount-ro',
    '/proc',
    '--dev',
    '/dev',
    '--size',
    String(command.limits.tmpBytes),
    '--tmpfs',
    '/tmp',
    '--size',
    String(command.limits.tmpBytes),
    '--tmpfs',
    '/home',
  ];
  // Masks and protections come after what they cover: later mounts win.
  const order = (m: Mount) => (m.kind === 'mask-file' || m.kind === 'mask-dir' ? 2 : m.kind === 'bind' ? 1 : m.kind === 'ro-bind' && isProtection(m, command.mounts) ? 3 : 0);
  for (const mount of [...command.mounts].sort((a, b) => order(a) - order(b))) args.push(...mountArgs(mount));
  for (const file of PROC_MASKS) args.push('--ro-bind', '/dev/null', file);
  if (command.seccompFd !== undefined) args.push('--seccomp', String(command.seccompFd));
  args.push('--dir', '/home/cadre', '--chdir', command.cwd, '--clearenv');
  for (const [name, value] of Object.entries(command.env)) args.push('--setenv', name, value);
  args.push('--', ...limitedArgv(command));
  return args;
}

/** A read-only bind inside a writable one (a protected path) must come after it. */
function isProtection(mount: Mount & { kind: 'ro-bind' }, all: Mount[]): boolean {
  return all.some((m) => m.kind === 'bind' && mount.target !== m.target && mount.target.startsWith(`${m.target}/`));
}

function mountArgs(mount: Mount): string[] {
  switch (mount.kind) {
    case 'ro-bind':
      return ['--ro-bind', mount.source, mount.target];
    case 'bind':
      return ['--bind', mount.source, mount.target];
    case 'symlink':
      return ['--symlink', mount.target, mount.link];
    case 'mask-file':
      return ['--ro-bind', '/dev/null', mount.target];
    case 'mask-dir':
      return ['--tmpfs', mount.target, '--remount-ro', mount.target];
  }
}

/**
 * The command under prlimit, inside the sandbox: limits set there count only the sandbox's own
 * processes (its user namespace), where set outside they would count all of the worker user's.
 */
function limitedArgv(command: BwrapCommand): string[] {
  if (!command.prlimit) return command.argv;
  const l = command.limits;
  return [command.prlimit, `--nproc=${l.processes}`, `--data=${l.memoryBytes}`, `--fsize=${l.fileSizeBytes}`, `--nofile=${l.openFiles}`, '--core=0', '--', ...command.argv];
}
