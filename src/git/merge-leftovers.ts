/**
 * What a merge left when its worker died mid-way, repaired by the next merge into the same branch
 * (a retry of the killed attempt, usually), before anything else looks at the checkout. Its lease
 * (./merge-lease) says where it was merging and from which commit; its git died with it (git is
 * tied to the worker), so a lock it held is stale once no other live git may hold it (./stale-locks).
 *
 * The killed merge is undone, never finished: the index and files it left may be half-written (a
 * lock never committed, a checkout cut off), so committing them could commit a wrong tree; both
 * sides of the merge are commits, unchanged, so the retry merges again from them and loses
 * nothing. A merge commit the killed attempt did make is kept: the retry finds the branch merged
 * and reports that commit (see ./merge). Undoing touches only what a merge of that branch writes:
 * the checkout was clean when the merge began, and anything else changed in it since is someone
 * else's, which the retry then refuses to merge over (WorktreeDirty), as always.
 */
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { type Git, commitOf, gitAt, run } from './git';
import type { LeaseRecord } from './merge-lease';
import { defaultWorktreeBase } from './names';
import { gitDirOf, removeStaleLocks } from './stale-locks';
import { worktreeEntries } from './worktrees';

/** The name mergeWorktree gives its temporary checkouts (mkdtemp's six characters after it). */
export const TEMPORARY_CHECKOUT_PREFIX = '.merge-';

/** Repairs what the dead merge of `left` left in the repository at `root`; returns what it did. */
export async function repairMergeLeftovers(git: Git, root: string, commonDir: string, left: LeaseRecord): Promise<string[]> {
  if (!left.checkout) return [];
  if (left.temporary) return removeTemporaryCheckout(git, root, commonDir, left);
  const entry = (await worktreeEntries(git)).find((e) => e.path === left.checkout);
  // Gone, or no longer a checkout of the target: nothing of the merge is left there.
  if (!entry || entry.prunable || entry.branch !== left.into || !left.before || !left.tip) return [];
  const there = await gitAt(entry.path);
  const done = await staleLocks(git, commonDir, entry.path, left.into);
  const pending = await commitOf(there, 'MERGE_HEAD');
  if (pending === left.tip) {
    await run(there, ['merge', '--abort'], `aborting the merge of ${left.branch} a killed attempt left in ${entry.path}`);
    done.push('aborted its merge in progress');
  } else if (pending) {
    // Someone else's merge in progress there since: not touched (the merge refuses it by name).
    return done;
  }
  if ((await commitOf(there, 'HEAD')) === left.before && (await run(there, ['status', '--porcelain'], 'reading the checkout')).trim() !== '') {
    await undoPartialMerge(there, left.before, left.tip);
    done.push(`undid the files its merge had written in ${entry.path}`);
  }
  return done;
}

/** A temporary checkout cadre made for the merge: everything in it is the merge's; the target branch keeps any commit made there. */
async function removeTemporaryCheckout(git: Git, root: string, commonDir: string, left: LeaseRecord): Promise<string[]> {
  const checkout = left.checkout as string;
  // Only ever a directory mergeWorktree names: whatever wrote the lease, nothing else is removed.
  const named = path.basename(checkout);
  if (path.dirname(checkout) !== defaultWorktreeBase(root) || !named.startsWith(TEMPORARY_CHECKOUT_PREFIX) || named.length <= TEMPORARY_CHECKOUT_PREFIX.length) return [];
  if (!existsSync(checkout) && !(await worktreeEntries(git)).some((e) => e.path === checkout)) return [];
  // Its own locks go with it; the target branch's ref lock, in the repository's directory, would stay.
  const done = await staleLocks(git, commonDir, checkout, left.into);
  await rm(checkout, { recursive: true, force: true });
  await run(git, ['worktree', 'prune'], 'pruning the temporary checkout of a killed merge');
  return [...done, `removed its temporary checkout ${checkout}`];
}

function staleLocks(git: Git, commonDir: string, checkout: string, into: string): Promise<string[]> {
  return gitDirOf(checkout, commonDir).then((gitDir) =>
    removeStaleLocks({ checkout, gitDir, commonDir, branches: [into], checkouts: async () => (await worktreeEntries(git)).map((e) => e.path) }),
  );
}

/**
 * Puts back, from HEAD, every path the merge of `tip` into `before` writes: the index entries,
 * the tracked files, and the files it added (git clean never follows a symlink out).
 */
async function undoPartialMerge(git: Git, before: string, tip: string): Promise<void> {
  const written = (await run(git, ['diff', '--name-only', '--no-renames', '-z', `${before}...${tip}`], 'listing what the merge writes')).split('\0').filter(Boolean);
  for (let i = 0; i < written.length; i += 200) {
    const paths = written.slice(i, i + 200).map((p) => `:(literal)${p}`);
    await run(git, ['reset', '--quiet', before, '--', ...paths], 'putting back the index');
    const inBefore = (await run(git, ['ls-tree', '-r', '-z', '--name-only', before, '--', ...paths], 'listing the files to put back')).split('\0').filter(Boolean);
    if (inBefore.length > 0) await run(git, ['checkout', '--quiet', before, '--', ...inBefore.map((p) => `:(literal)${p}`)], 'putting back the files');
    await run(git, ['clean', '--force', '--quiet', '--', ...paths], 'removing the files the merge added');
  }
}
