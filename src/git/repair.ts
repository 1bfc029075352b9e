/**
 * Infrastructure recovery for a worktree: lock files that a dead git process left behind block
 * every git command after it. A lock older than STALE_LOCK_MS is taken for such a leftover (git
 * itself holds its locks for milliseconds); a younger one may belong to a live process and stays.
 */
import { lstat, rm } from 'node:fs/promises';
import path from 'node:path';
import { run } from './git';
import { hardenedGit } from './hardened';

export const STALE_LOCK_MS = 30_000;
const LOCKS = ['index.lock', 'HEAD.lock', 'config.lock'];

export async function repairWorktree(worktree: string, now = Date.now()): Promise<{ removed: string[] }> {
  // Only rev-parse runs here, which reads no attributes: no configuration scan (it may be what is broken).
  const git = hardenedGit(worktree);
  const dirs = new Set<string>();
  for (const flag of ['--git-dir', '--git-common-dir']) dirs.add(path.resolve(worktree, (await run(git, ['rev-parse', flag], 'finding the git directory')).trim()));
  const removed: string[] = [];
  for (const dir of dirs) {
    for (const name of LOCKS) {
      const lock = path.join(dir, name);
      const info = await lstat(lock).catch(() => undefined);
      if (!info?.isFile() || now - info.mtimeMs < STALE_LOCK_MS) continue;
      await rm(lock, { force: true });
      removed.push(path.relative(worktree, lock));
    }
  }
  return { removed };
}
