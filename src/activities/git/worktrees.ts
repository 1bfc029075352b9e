/**
 * Worktrees cadre makes for tasks: `<base>/<plan>/<task>` on branch `cadre/<plan>/<task>`.
 * Each operation is safe to retry after a crash at any point: creation finds and checks what a
 * previous attempt made, removal of what is gone succeeds. The base a worktree started from is
 * kept in the repository's config (`branch.<branch>.cadreBase`, `.cadreBaseCommit`), so status,
 * merge and removal know it without a database.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, realpath, rmdir } from 'node:fs/promises';
import path from 'node:path';
import { ErrorTypes, permanent } from '../errors';
import { type Git, commitOf, commitsIn, gitAt, isAncestor, mainRepositoryRoot, repositoryRoot, run } from './git';
import { isInside, worktreeNames } from './names';

export const CADRE_BRANCH_PREFIX = 'cadre/';

export interface WorktreeEntry {
  path: string;
  /** Without `refs/heads/`; absent when detached. */
  branch?: string;
  head?: string;
  /** Registered, but its directory is gone. */
  prunable: boolean;
}

/** `git worktree list --porcelain`, parsed. */
export async function worktreeEntries(git: Git): Promise<WorktreeEntry[]> {
  const out = await run(git, ['worktree', 'list', '--porcelain'], 'listing worktrees');
  const entries: WorktreeEntry[] = [];
  for (const block of out.split('\n\n')) {
    const lines = block.split('\n').filter(Boolean);
    const at = lines.find((l) => l.startsWith('worktree '));
    if (!at) continue;
    const branch = lines.find((l) => l.startsWith('branch '))?.slice('branch refs/heads/'.length);
    const head = lines.find((l) => l.startsWith('HEAD '))?.slice(5);
    entries.push({ path: at.slice(9), ...(branch && { branch }), ...(head && { head }), prunable: lines.some((l) => l.startsWith('prunable')) });
  }
  return entries;
}

export interface CreateRequest {
  repo: string;
  plan: string;
  task: string;
  /** The ref the branch starts from; the repository's current branch when missing. */
  base?: string;
  /** Where worktrees go; beside the repository by default. */
  baseDir?: string;
  /** The run (workflow id) and step that lease it, kept with the branch for `cadre worktrees`. */
  run?: string;
  step?: string;
}

export interface WorktreeInfo {
  path: string;
  branch: string;
  base: string;
  baseCommit: string;
  /** False when a previous attempt had made it already (and it checked out). */
  created: boolean;
}

export async function createWorktree(request: CreateRequest): Promise<WorktreeInfo> {
  const root = await mainRepositoryRoot(request.repo);
  const git = await gitAt(root);
  const names = worktreeNames(root, request.plan, request.task, request.baseDir);
  const base = request.base ?? (await currentBranch(git));
  const baseCommit = await commitOf(git, base);
  if (!baseCommit) throw permanent(ErrorTypes.BadToolInput, `base: "${base}" names no commit in ${root}`);

  const parent = path.dirname(names.path);
  await mkdir(parent, { recursive: true });
  // The base directory may be reached through symlinks: check where it really is.
  const target = path.join(await realpath(parent), path.basename(names.path));
  if (isInside(target, root)) throw permanent(ErrorTypes.BadToolInput, `baseDir: ${target} is inside the repository ${root}; worktrees go beside it`);

  const existing = (await worktreeEntries(git)).find((e) => e.path === target);
  if (existing && !existing.prunable) {
    const adopted = await adopt(git, root, existing, names.branch, base, baseCommit);
    await recordOwner(git, names.branch, request);
    return adopted;
  }
  if (existing?.prunable) await run(git, ['worktree', 'prune'], 'pruning worktrees whose directories are gone');
  await clearLeftover(target);

  const branchCommit = await commitOf(git, `refs/heads/${names.branch}`);
  if (branchCommit) {
    // A branch kept from an earlier worktree of the same task: check it out again, if it grew from this base.
    if (!(await isAncestor(git, baseCommit, names.branch))) {
      throw permanent(ErrorTypes.WorktreeConflict, `branch ${names.branch} exists and does not start from ${base}; merge or delete it first`);
    }
    await run(git, ['worktree', 'add', target, names.branch], `adding worktree ${target}`);
  } else {
    await run(git, ['worktree', 'add', '-b', names.branch, target, baseCommit], `adding worktree ${target}`);
  }
  await run(git, ['config', `branch.${names.branch}.cadreBase`, base], 'recording the base');
  await run(git, ['config', `branch.${names.branch}.cadreBaseCommit`, baseCommit], 'recording the base');
  await recordOwner(git, names.branch, request);
  return { path: target, branch: names.branch, base, baseCommit, created: true };
}

async function recordOwner(git: Git, branch: string, request: CreateRequest): Promise<void> {
  if (request.run) await run(git, ['config', `branch.${branch}.cadreRun`, request.run], 'recording the run');
  if (request.step) await run(git, ['config', `branch.${branch}.cadreStep`, request.step], 'recording the step');
}

/** A worktree a previous attempt made: kept only if it is what this request would have made. */
async function adopt(git: Git, root: string, entry: WorktreeEntry, branch: string, base: string, baseCommit: string): Promise<WorktreeInfo> {
  if (entry.branch !== branch) {
    throw permanent(ErrorTypes.WorktreeConflict, `${entry.path} is a worktree of ${entry.branch ? `branch ${entry.branch}` : 'a detached HEAD'}, not ${branch}`);
  }
  const link = await readFile(path.join(entry.path, '.git'), 'utf8').catch(() => '');
  const commonDir = path.resolve(root, (await run(git, ['rev-parse', '--git-common-dir'], 'reading the repository')).trim());
  if (!link.startsWith('gitdir: ') || !isInside(path.resolve(entry.path, link.slice(8).trim()), await realpath(commonDir))) {
    throw permanent(ErrorTypes.WorktreeConflict, `${entry.path}/.git does not link to this repository's worktree metadata`);
  }
  if (!(await isAncestor(git, baseCommit, branch))) {
    throw permanent(ErrorTypes.WorktreeConflict, `${entry.path} is on ${branch}, which does not start from ${base}`);
  }
  // The crash may have come between `worktree add` and recording the base.
  await run(git, ['config', `branch.${branch}.cadreBase`, base], 'recording the base');
  await run(git, ['config', `branch.${branch}.cadreBaseCommit`, baseCommit], 'recording the base');
  return { path: entry.path, branch, base, baseCommit, created: false };
}

/** An empty directory where the worktree goes is removed; one with files is never touched. */
async function clearLeftover(target: string): Promise<void> {
  if (!existsSync(target)) return;
  const inside = await readdir(target).catch(() => undefined);
  if (inside === undefined) throw permanent(ErrorTypes.WorktreeConflict, `${target} exists and is not a directory`);
  if (inside.length > 0) {
    throw permanent(ErrorTypes.WorktreeConflict, `${target} exists, is not a worktree of this repository, and holds files (${inside.slice(0, 5).join(', ')}); move it away`);
  }
  await rmdir(target);
}

async function currentBranch(git: Git): Promise<string> {
  const name = (await run(git, ['rev-parse', '--abbrev-ref', 'HEAD'], 'reading the current branch')).trim();
  return name === 'HEAD' ? (await run(git, ['rev-parse', 'HEAD'], 'reading HEAD')).trim() : name;
}

export interface BaseOf {
  base: string;
  baseCommit: string;
}

/** What cadre recorded for one of its branches (empty strings when missing). */
export async function branchRecord(git: Git, branch: string): Promise<{ base: string; baseCommit: string; run: string; step: string }> {
  const read = (key: string) => git.raw(['config', '--get', `branch.${branch}.${key}`]).then((v) => v.trim(), () => '');
  const [base, baseCommit, run, step] = await Promise.all([read('cadreBase'), read('cadreBaseCommit'), read('cadreRun'), read('cadreStep')]);
  return { base, baseCommit, run, step };
}

/** The base recorded for a cadre branch. */
export async function baseOf(git: Git, branch: string): Promise<BaseOf> {
  const { base, baseCommit } = await branchRecord(git, branch);
  if (!base || !baseCommit) throw permanent(ErrorTypes.BadToolInput, `branch ${branch} was not made by cadre (no recorded base)`);
  return { base, baseCommit };
}

export interface WorktreeStatus {
  path: string;
  branch: string;
  clean: boolean;
  staged: string[];
  changed: string[];
  untracked: string[];
  /** Commits on the branch that its base lacks, and the reverse. */
  ahead: number;
  behind: number;
}

export async function worktreeStatus(request: { path: string }): Promise<WorktreeStatus> {
  const { git, branch } = await openWorktree(request.path);
  const { base } = await baseOf(git, branch);
  const status = await git.status();
  const staged = status.files.filter((f) => f.index !== ' ' && f.index !== '?').map((f) => f.path);
  const changed = status.files.filter((f) => f.working_dir !== ' ' && f.working_dir !== '?').map((f) => f.path);
  const untracked = status.not_added;
  const [ahead, behind] = await Promise.all([commitsIn(git, branch, base), commitsIn(git, base, branch)]);
  return { path: request.path, branch, clean: status.files.length === 0, staged, changed, untracked, ahead, behind };
}

/** A cadre worktree at `dir`: its git client and branch. Anything else is refused. */
export async function openWorktree(dir: string): Promise<{ git: Git; branch: string; root: string }> {
  const root = await repositoryRoot(dir);
  const git = await gitAt(root);
  const branch = (await run(git, ['rev-parse', '--abbrev-ref', 'HEAD'], 'reading the branch')).trim();
  if (!branch.startsWith(CADRE_BRANCH_PREFIX)) throw permanent(ErrorTypes.BadToolInput, `path: ${dir} is not a cadre worktree (branch ${branch})`);
  return { git, branch, root };
}

export async function commitWorktree(request: { path: string; message: string; all?: boolean }): Promise<{ committed: boolean; commit?: string }> {
  if (typeof request.message !== 'string' || request.message.trim() === '') throw permanent(ErrorTypes.BadToolInput, 'message: a commit needs a message');
  const { git } = await openWorktree(request.path);
  if (request.all !== false) await run(git, ['add', '--all'], 'staging changes');
  const staged = (await run(git, ['diff', '--cached', '--name-only'], 'reading staged changes')).trim();
  if (!staged) return { committed: false };
  await run(git, ['commit', '--quiet', '--no-verify', '-m', request.message], 'committing');
  return { committed: true, commit: (await run(git, ['rev-parse', 'HEAD'], 'reading the commit')).trim() };
}

/** Back to where the worktree started: its commits, changes and untracked files dropped (ignored files stay). */
export async function resetWorktree(request: { path: string }): Promise<{ commit: string }> {
  const { git, branch } = await openWorktree(request.path);
  const { baseCommit } = await baseOf(git, branch);
  await run(git, ['reset', '--quiet', '--hard', baseCommit], 'resetting to the base');
  await run(git, ['clean', '-fd', '--quiet'], 'removing untracked files');
  return { commit: baseCommit };
}
