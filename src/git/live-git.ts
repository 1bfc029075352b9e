/**
 * The git processes alive on this machine that may be working in some folders: what a lock file
 * left in a repository could belong to. A lease proves that cadre's own git of a dead holder is
 * dead (./lease); this proves that no other git (a user's, another program's) holds the lock now.
 *
 * A git works where its working directory is (git moves there for `-C` and to the top of the
 * checkout), or where an argument or GIT_DIR / GIT_WORK_TREE points. A git whose working directory
 * cannot be read (another user's) may be anywhere, so it counts. Only processes this one can see
 * count: a git in another PID namespace or on another machine sharing the disk is out of sight.
 */
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { isInside } from '../processes/path-inside';

export interface GitProcess {
  pid: number;
  /** Its working directory; undefined when it cannot be read. */
  cwd?: string;
  /** Paths it names: arguments, GIT_DIR, GIT_WORK_TREE, resolved from its working directory. */
  names: string[];
  /** Its program and git command (`git commit`). */
  command: string;
}

/** The live git processes (not zombies), this one left out. */
export function gitProcesses(): GitProcess[] {
  const found: GitProcess[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    const stat = read(`/proc/${pid}/stat`);
    if (!stat) continue;
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if ((comm !== 'git' && !comm.startsWith('git-')) || state === 'Z') continue;
    const args = (read(`/proc/${pid}/cmdline`) ?? '').split('\0').filter(Boolean);
    let cwd: string | undefined;
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch (err) {
      // Gone since its stat was read: not a holder. Anything else (another user's): unknown.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
    }
    const environment = (read(`/proc/${pid}/environ`) ?? '').split('\0').filter((v) => /^GIT_(DIR|WORK_TREE)=/.test(v));
    const values = [...args.slice(1).map((a) => a.replace(/^--(git-dir|work-tree)=/, '')), ...environment.map((v) => v.slice(v.indexOf('=') + 1))];
    const names = cwd === undefined ? [] : values.filter((v) => v.length > 0 && !v.startsWith('-')).map((v) => path.resolve(cwd, v));
    // What it is, not its whole command line (which may hold anything, a URL with a password too).
    const command = [path.basename(args[0] ?? comm), ...args.slice(1).filter((a) => /^[a-z][a-z-]*$/.test(a)).slice(0, 1)].join(' ');
    found.push({ pid, ...(cwd !== undefined && { cwd }), names, command });
  }
  return found;
}

/** Which of `processes` may be working in one of `dirs` (absolute, symlinks resolved). */
export function workingIn(processes: GitProcess[], dirs: string[]): GitProcess[] {
  const inside = (p: string) => dirs.some((dir) => isInside(p, dir));
  return processes.filter((g) => g.cwd === undefined || inside(g.cwd) || g.names.some(inside));
}

function read(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
