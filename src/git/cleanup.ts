/**
 * Removing and listing cadre's worktrees. Removal never loses work: uncommitted changes stop it
 * (unless the caller says `discard`), and commits not merged into the base keep their branch.
 */
import { existsSync } from 'node:fs';
import { realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import { ErrorTypes, permanent } from '../errors/application-failures';
import { type CheckoutLease, type CheckoutRecord, checkoutLeaseFile, inCheckout } from './checkout-lease';
import { type Git, commitOf, commitsIn, gitAt, locateRepository, mainRepositoryRoot, run } from './git';
import { forgetLastRecord } from './lease';
import { CADRE_BRANCH_PREFIX, type WorktreeEntry, readMetadata, worktreeEntries } from './worktrees';

export interface RemoveRequest {
  repo: string;
  path: string;
  /** Drop uncommitted changes (and unmerged commits' branch is still kept). */
  discard?: boolean;
}

export interface RemoveResult {
  removed: boolean;
  /** The branch left in place because it holds commits its base lacks. */
  keptBranch?: string;
  reason: string;
}

export async function removeWorktree(request: RemoveRequest): Promise<RemoveResult> {
  const { root, commonDir } = await locateRepository(request.repo);
  const git = await gitAt(root);
  const target = existsSync(request.path) ? await realpath(request.path) : path.resolve(request.path);
  const removal = async (lease: CheckoutLease): Promise<RemoveResult> => {
    const entry = (await worktreeEntries(git)).find((e) => e.path === target);
    if (!entry) {
      // Removed by an attempt killed before it could drop the branch: that goes as it would have.
      const finished = [...lease.leftovers].reverse().find((l) => l.op === 'remove' && l.removing && l.branch?.startsWith(CADRE_BRANCH_PREFIX));
      return finished ? dropBranch(git, finished.branch as string, finished.base) : { removed: false, reason: 'already gone' };
    }
    if (!entry.branch?.startsWith(CADRE_BRANCH_PREFIX)) {
      throw permanent(ErrorTypes.BadToolInput, `path: ${target} is not a worktree cadre made (branch ${entry.branch ?? 'detached'}); not removing it`);
    }
    // Read before removal: the metadata goes with the worktree.
    const base = (await readMetadata(entry.path))?.base;
    const dirty = entry.prunable ? [] : await uncommitted(entry.path);
    if (dirty.length > 0 && !request.discard) {
      throw permanent(ErrorTypes.WorktreeDirty, `${target} holds uncommitted work (${listed(dirty)}); commit it, or remove with discard: true`, { files: dirty });
    }
    // Decided: a retry after a kill finishes it (finishRemoval).
    await lease.note({ removing: true, branch: entry.branch, ...(base !== undefined && { base }) });
    if (entry.prunable) await run(git, ['worktree', 'prune'], 'pruning worktrees whose directories are gone');
    else await run(git, ['worktree', 'remove', ...(dirty.length > 0 ? ['--force'] : []), entry.path], `removing worktree ${target}`);
    await forgetLastRecord(checkoutLeaseFile(commonDir, target));
    return dropBranch(git, entry.branch, base);
  };
  return inCheckout({ checkout: target, commonDir, git }, { op: 'remove' }, removal, { repair: (left) => finishRemoval(git, target, left) });
}

/** A removal killed with its worker: what `git worktree remove` had not deleted yet is deleted, and the worktree pruned. */
async function finishRemoval(git: Git, target: string, left: CheckoutRecord): Promise<void> {
  if (left.op !== 'remove' || !left.removing) return;
  const entry = (await worktreeEntries(git)).find((e) => e.path === target);
  if (!entry) return;
  await rm(target, { recursive: true, force: true });
  await run(git, ['worktree', 'prune'], `pruning the worktree a killed attempt was removing at ${target}`);
}

/** Deletes the branch when its base has all its commits; keeps it, and says where the work is, otherwise (or when the base is unknown). */
async function dropBranch(git: Git, branch: string, base: string | undefined): Promise<RemoveResult> {
  if (!base || !(await commitOf(git, base))) return { removed: true, keptBranch: branch, reason: `its base is unknown: kept on branch ${branch}` };
  const unmerged = await commitsIn(git, branch, base);
  if (unmerged > 0) {
    return { removed: true, keptBranch: branch, reason: `${unmerged} commit(s) not merged into ${base}: kept on branch ${branch}` };
  }
  await run(git, ['branch', '-D', branch], `deleting branch ${branch}`);
  return { removed: true, reason: `merged into ${base}` };
}

/** Uncommitted changes and untracked files in a worktree, as paths. */
async function uncommitted(dir: string): Promise<string[]> {
  const status = await (await gitAt(dir)).status();
  return status.files.map((f) => f.path);
}

function listed(files: string[]): string {
  return files.length > 10 ? `${files.slice(0, 10).join(', ')} and ${files.length - 10} more` : files.join(', ');
}

export type WorktreeState = 'clean' | 'dirty' | 'merged' | 'missing';

export interface CadreWorktree {
  path: string;
  branch: string;
  base?: string;
  /** The run (workflow id) and step that made it. */
  run?: string;
  step?: string;
  state: WorktreeState;
  /** Commits on the branch that its base lacks. */
  ahead?: number;
  files?: string[];
}

/** The worktrees cadre made in a repository, with what each holds. */
export async function listWorktrees(request: { repo: string }): Promise<CadreWorktree[]> {
  const git = await gitAt(await mainRepositoryRoot(request.repo));
  const mine = (await worktreeEntries(git)).filter((e): e is WorktreeEntry & { branch: string } => !!e.branch?.startsWith(CADRE_BRANCH_PREFIX));
  return Promise.all(mine.map((entry) => describe(git, entry)));
}

async function describe(git: Git, entry: WorktreeEntry & { branch: string }): Promise<CadreWorktree> {
  const { base, run, step } = (await readMetadata(entry.path)) ?? {};
  const known = { path: entry.path, branch: entry.branch, ...(base && { base }), ...(run && { run }), ...(step && { step }) };
  if (entry.prunable) return { ...known, state: 'missing' };
  const files = await uncommitted(entry.path);
  const ahead = base && (await commitOf(git, base)) ? await commitsIn(git, entry.branch, base) : undefined;
  const state: WorktreeState = files.length > 0 ? 'dirty' : ahead === 0 ? 'merged' : 'clean';
  return { ...known, state, ...(ahead !== undefined && { ahead }), ...(files.length > 0 && { files }) };
}
