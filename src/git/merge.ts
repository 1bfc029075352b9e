/**
 * Merging a task's branch back. The merge runs in a checkout of the target: the one that has it
 * checked out already (if it is clean: a merge must not mix with someone's edits), else a
 * temporary worktree made for the merge and removed after. A conflict is never resolved by
 * taking a side: the merge is aborted, both branches stay as they were, and the failure lists
 * the files for a human.
 *
 * One merge into a branch at a time, under a lease (./merge-lease) that also says where the merge
 * goes: a merge killed with its worker is repaired by the next one (./merge-leftovers), and a
 * retry whose merge commit the killed attempt made reports that commit instead of merging again.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { ErrorTypes, permanent, transient } from '../errors/application-failures';
import { type Git, commitOf, gitAt, gitFailure, mainRepositoryRoot, run } from './git';
import { underLease } from './lease';
import { type MergeLease, takeMergeLease } from './merge-lease';
import { TEMPORARY_CHECKOUT_PREFIX, repairMergeLeftovers } from './merge-leftovers';
import { defaultWorktreeBase } from './names';
import { readMetadata, worktreeEntries } from './worktrees';

export interface MergeRequest {
  repo: string;
  branch: string;
  /** The branch to merge into; the task branch's recorded base when missing. */
  into?: string;
}

export interface MergeResult {
  into: string;
  /** The target's commit after the merge. */
  commit: string;
  /** The target had every commit already (and not by this merge: one an earlier attempt made is reported as made). */
  upToDate: boolean;
}

export async function mergeWorktree(request: MergeRequest): Promise<MergeResult> {
  const root = await mainRepositoryRoot(request.repo);
  const git = await gitAt(root);
  const tip = await commitOf(git, `refs/heads/${request.branch}`);
  if (!tip) throw permanent(ErrorTypes.BadToolInput, `branch: ${request.branch} does not exist in ${root}`);
  const into = request.into ?? (await recordedBase(git, request.branch));
  if (!(await commitOf(git, `refs/heads/${into}`))) throw permanent(ErrorTypes.BadToolInput, `into: ${into} is not a branch of ${root}`);

  const commonDir = path.resolve(root, (await run(git, ['rev-parse', '--git-common-dir'], 'reading the repository')).trim());
  const lease = await takeMergeLease(commonDir, request.branch, into);
  return underLease(
    lease,
    (left) => repairMergeLeftovers(git, root, commonDir, left),
    () => mergeUnderLease(git, root, lease, { branch: request.branch, tip, into }),
  );
}

async function mergeUnderLease(git: Git, root: string, lease: MergeLease, merge: { branch: string; tip: string; into: string }): Promise<MergeResult> {
  const { branch, into } = merge;
  const checkout = (await worktreeEntries(git)).find((e) => e.branch === into && !e.prunable);
  if (checkout) {
    const there = await gitAt(checkout.path);
    const dirty = (await there.status()).files.map((f) => f.path);
    if (dirty.length > 0) {
      throw permanent(ErrorTypes.WorktreeDirty, `${into} is checked out at ${checkout.path} with uncommitted changes (${dirty.slice(0, 10).join(', ')}); commit or stash them, then merge again`, { files: dirty });
    }
    await readyToMerge(there, checkout.path, branch);
    await lease.note({ checkout: checkout.path, before: await commitOf(there, 'HEAD'), tip: merge.tip });
    return mergeIn(there, branch, into);
  }
  const parent = defaultWorktreeBase(root);
  await run(git, ['worktree', 'prune'], 'pruning worktrees whose directories are gone');
  await mkdir(parent, { recursive: true });
  const temporary = await mkdtemp(path.join(parent, TEMPORARY_CHECKOUT_PREFIX));
  await rm(temporary, { recursive: true });
  // Noted before it exists: a worker killed while making it leaves nothing the next merge does not find.
  await lease.note({ checkout: temporary, temporary: true });
  await run(git, ['worktree', 'add', '--quiet', temporary, into], `checking out ${into} to merge into it`);
  try {
    return await mergeIn(await gitAt(temporary), branch, into);
  } finally {
    await run(git, ['worktree', 'remove', '--force', temporary], 'removing the merge checkout');
  }
}

/**
 * A checkout about to take a merge: no other git process holds its index, and no merge is in
 * progress. git 2.39 leaves MERGE_HEAD behind when a merge cannot write the index, and the abort
 * then fails on the same lock: such a leftover of this same branch, in a clean checkout, is
 * aborted (nothing to lose); anyone else's merge in progress is refused.
 */
async function readyToMerge(git: Git, where: string, branch: string): Promise<void> {
  const lock = path.resolve(where, (await run(git, ['rev-parse', '--git-path', 'index.lock'], 'locating the index lock')).trim());
  if (existsSync(lock)) throw transient(ErrorTypes.GitBusy, `merging ${branch} in ${where}: another git process holds ${lock}`);
  const pending = await commitOf(git, 'MERGE_HEAD');
  if (!pending) return;
  if (pending !== (await commitOf(git, `refs/heads/${branch}`))) {
    throw permanent(ErrorTypes.WorktreeConflict, `${where} has a merge of ${pending} in progress; finish or abort it, then merge again`);
  }
  await run(git, ['merge', '--abort'], `aborting an unfinished merge of ${branch} in ${where}`);
}

/** The base recorded for the worktree that has `branch` checked out. */
async function recordedBase(git: Git, branch: string): Promise<string> {
  const entry = (await worktreeEntries(git)).find((e) => e.branch === branch && !e.prunable);
  const base = entry && (await readMetadata(entry.path))?.base;
  if (!base) throw permanent(ErrorTypes.BadToolInput, `into: ${branch} has no worktree cadre made with a recorded base; say which branch to merge into`);
  return base;
}

async function mergeIn(git: Git, branch: string, into: string): Promise<MergeResult> {
  const before = await commitOf(git, 'HEAD');
  // git reports a conflict on stdout with exit 1, which simple-git may not raise: look at the index either way.
  let failure: unknown;
  await git.raw(['merge', '--no-ff', '--no-edit', '-m', mergeMessage(branch, into), branch]).catch((err: unknown) => {
    failure = err;
  });
  const conflicted = (await git.raw(['diff', '--name-only', '--diff-filter=U']).catch(() => '')).split('\n').filter(Boolean);
  if (conflicted.length > 0 || failure) await git.raw(['merge', '--abort']).catch(() => undefined);
  if (conflicted.length > 0) {
    throw permanent(ErrorTypes.MergeConflict, `merging ${branch} into ${into} conflicts in ${conflicted.join(', ')}; resolve it by hand (both branches are unchanged)`, {
      files: conflicted,
      branch,
      into,
    });
  }
  // The repository's merge drivers are inert (./drivers): git cannot start one and refuses the merge.
  if (failure && /Failed to execute internal merge/.test(String((failure as Error).message))) {
    throw permanent(
      ErrorTypes.GitFailed,
      `merging ${branch} into ${into} needs a merge driver the repository configures (a "merge=" attribute in .gitattributes); cadre never runs those: merge it by hand (both branches are unchanged)`,
      { branch, into },
    );
  }
  // Anything else git refused: a held lock is retryable, the rest permanent.
  if (failure) throw gitFailure(failure, `merging ${branch} into ${into}`);
  const after = (await commitOf(git, 'HEAD')) as string;
  return { into, commit: after, upToDate: after === before && !(await isThisMerge(git, after, branch, into)) };
}

/** Whether `commit` is the merge commit cadre makes of `branch` into `into`, with the branch's tip as its second parent. */
async function isThisMerge(git: Git, commit: string, branch: string, into: string): Promise<boolean> {
  const [parents, subject] = (await run(git, ['log', '-1', '--format=%P%n%s', commit], 'reading the target')).trim().split('\n');
  const second = parents?.split(' ')[1];
  return subject === mergeMessage(branch, into) && second !== undefined && second === (await commitOf(git, `refs/heads/${branch}`));
}

const mergeMessage = (branch: string, into: string) => `Merge ${branch} into ${into}`;
