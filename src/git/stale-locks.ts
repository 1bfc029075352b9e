/**
 * The lock files a killed git left, removed by the next holder of the lease it ran under. A lock
 * is removed only when nothing alive can hold it: the lease's dead holder proves that cadre's own
 * git there is dead (git is tied to the worker), and no live git process may be working where the
 * lock is (./live-git). A lock's age proves nothing (`git commit` holds index.lock while its
 * editor is open), so a lock a live git may hold stays, and the repair fails GitBusy (retried).
 *
 * A checkout's own locks (index.lock, HEAD.lock, ORIG_HEAD.lock...: every `*.lock` in its git
 * directory) can be held only by a git working in that checkout; the repository's shared ones
 * (the branches' ref locks, packed-refs.lock, config.lock) by a git in any of its checkouts.
 */
import { lstat, readFile, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { isInside } from '../processes/path-inside';
import { ErrorTypes, transient } from '../errors/application-failures';
import { type GitProcess, gitProcesses, workingIn } from './live-git';

export interface LockScope {
  /** The checkout the dead holder worked in, and its git directory (undefined when it cannot be found). */
  checkout: string;
  gitDir: string | undefined;
  commonDir: string;
  /** Branches whose refs it may have been writing. */
  branches: readonly string[];
  /** Every checkout of the repository, listed only if a shared lock is found. */
  checkouts: () => Promise<string[]>;
}

/** Locks in the common directory itself (in the main checkout's git directory, that is). */
const SHARED = new Set(['packed-refs.lock', 'config.lock', 'shallow.lock']);

/** Removes the stale locks of `scope`; returns what it removed. Throws GitBusy when a live git may hold one. */
export async function removeStaleLocks(scope: LockScope): Promise<string[]> {
  const { commonDir, gitDir } = scope;
  const own = gitDir ? (await lockFiles(gitDir)).filter((f) => gitDir !== commonDir || !SHARED.has(path.basename(f))) : [];
  const shared = (await Promise.all([...SHARED, ...scope.branches.map(refLock)].map(async (name) => (name && (await isFile(path.join(commonDir, name))) ? path.join(commonDir, name) : undefined)))).filter(
    (f): f is string => f !== undefined,
  );
  if (own.length === 0 && shared.length === 0) return [];
  const live = gitProcesses();
  const holders = [
    ...(own.length > 0 ? workingIn(live, [scope.checkout, ...(gitDir ? [gitDir] : [])]) : []),
    ...(shared.length > 0 ? workingIn(live, [...(await scope.checkouts()), commonDir]) : []),
  ];
  if (holders.length > 0) throw transient(ErrorTypes.GitBusy, `${scope.checkout}: a killed attempt left ${[...own, ...shared].map((f) => path.basename(f)).join(', ')}, and a live git may hold them now (${describe(holders)})`);
  for (const lock of [...own, ...shared]) await rm(lock, { force: true });
  return [...own, ...shared].map((lock) => `removed its stale ${path.relative(commonDir, lock)}`);
}

/**
 * The git directory of `checkout`: its `.git` folder, or the folder its `.git` file links to
 * inside the repository's common one. Undefined for anything else.
 */
export async function gitDirOf(checkout: string, commonDir: string): Promise<string | undefined> {
  const dotGit = path.join(checkout, '.git');
  const info = await lstat(dotGit).catch(() => undefined);
  if (info?.isDirectory()) return dotGit === commonDir ? dotGit : undefined;
  if (!info?.isFile()) return undefined;
  const link = await readFile(dotGit, 'utf8').catch(() => '');
  if (!link.startsWith('gitdir: ')) return undefined;
  const dir = path.resolve(checkout, link.slice(8).trim());
  return isInside(dir, path.join(commonDir, 'worktrees')) && dir !== path.join(commonDir, 'worktrees') ? dir : undefined;
}

/** `refs/heads/<branch>.lock`, for a name that stays a branch ref (anything else is ignored). */
function refLock(branch: string): string | undefined {
  const ref = path.posix.normalize(`refs/heads/${branch}.lock`);
  return ref.startsWith('refs/heads/') && !branch.split('/').some((part) => part === '' || part === '.' || part === '..') ? ref : undefined;
}

/** The regular `*.lock` files directly in `dir`. */
async function lockFiles(dir: string): Promise<string[]> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.lock'));
  const files = await Promise.all(names.map(async (n) => ((await isFile(path.join(dir, n))) ? path.join(dir, n) : undefined)));
  return files.filter((f): f is string => f !== undefined);
}

async function isFile(file: string): Promise<boolean> {
  return (await lstat(file).catch(() => undefined))?.isFile() ?? false;
}

function describe(holders: GitProcess[]): string {
  const unique = [...new Map(holders.map((h) => [h.pid, h])).values()];
  return unique
    .slice(0, 3)
    .map((h) => `process ${h.pid}${h.cwd ? ` in ${h.cwd}` : ''}: ${h.command}`)
    .join('; ');
}
