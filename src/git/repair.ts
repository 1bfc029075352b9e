/**
 * Infrastructure recovery for a worktree: lock files that a dead git process left behind block
 * every git command after it. A lock is taken for such a leftover when it is older than
 * STALE_LOCK_MS (git holds most of its locks for milliseconds) and no live git process may hold
 * it (./live-git): age alone proves nothing, `git commit` holds index.lock while its editor is open.
 * (A lock cadre's own killed git left is removed sooner, by the next operation under the checkout's
 * lease: ./checkout-lease.)
 */
import { lstat, rm } from 'node:fs/promises';
import path from 'node:path';
import { run } from './git';
import { hardenedGit } from './hardened';
import { gitProcesses, workingIn } from './live-git';

export const STALE_LOCK_MS = 30_000;
const LOCKS = ['index.lock', 'HEAD.lock', 'config.lock'];

export async function repairWorktree(worktree: string, now = Date.now()): Promise<{ removed: string[] }> {
  // Only rev-parse runs here, which reads no attributes: no configuration scan (it may be what is broken).
  const git = hardenedGit(worktree);
  const [gitDir, commonDir] = (await run(git, ['rev-parse', '--git-dir', '--git-common-dir'], 'finding the git directory')).trim().split('\n').map((d) => path.resolve(worktree, d));
  const stale: string[] = [];
  for (const dir of new Set([gitDir, commonDir])) {
    for (const name of LOCKS) {
      const lock = path.join(dir, name);
      const info = await lstat(lock).catch(() => undefined);
      if (info?.isFile() && now - info.mtimeMs >= STALE_LOCK_MS) stale.push(lock);
    }
  }
  if (stale.length === 0) return { removed: [] };
  // A lock in the common directory may be held by a git in any checkout of the repository.
  const shared = stale.some((lock) => path.dirname(lock) === commonDir && commonDir !== gitDir);
  const checkouts = shared ? (await run(git, ['worktree', 'list', '--porcelain'], 'listing worktrees')).split('\n').flatMap((l) => (l.startsWith('worktree ') ? [l.slice(9)] : [])) : [];
  if (workingIn(gitProcesses(), [worktree, gitDir, ...(shared ? [commonDir, ...checkouts] : [])]).length > 0) return { removed: [] };
  for (const lock of stale) await rm(lock, { force: true });
  return { removed: stale.map((lock) => path.relative(worktree, lock)) };
}
