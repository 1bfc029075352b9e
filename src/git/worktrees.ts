/**
 * Worktrees cadre makes for tasks: `<base>/<plan>/<task>` on branch `cadre/<plan>/<task>`.
 * Each operation is safe to retry after a crash at any point: creation finds and checks what a
 * previous attempt made, removal of what is gone succeeds. The base a worktree started from is
 * kept in the worktree's own git directory (`.git/worktrees/<name>/cadre.json`, removed with the
 * worktree), so status, merge and removal know it without a database.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, realpath, rm, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ErrorTypes, permanent } from '../errors/application-failures';
import { type Git, commitOf, commitsIn, gitAt, gitFailure, isAncestor, locateRepository, run } from './git';
import { isInside } from '../processes/path-inside';
import { worktreeNames } from './names';
import { type CheckoutLease, type CheckoutRecord, inCheckout } from './checkout-lease';
import { restoreSnapshot, snapshotParent } from './snapshot';

export const CADRE_BRANCH_PREFIX = 'cadre/';

export interface WorktreeEntry {
  path: string;
  /** Without `refs/heads/`; absent when detached. */
  branch?: string;
  head?: string;
  /** Registered, but its directory is gone. */
  prunable: boolean;
  /** Locked, with its reason ("initializing" while `git worktree add` makes it). */
  locked?: string;
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
    const locked = lines.find((l) => l === 'locked' || l.startsWith('locked '))?.slice(7);
    entries.push({ path: at.slice(9), ...(branch && { branch }), ...(head && { head }), prunable: lines.some((l) => l.startsWith('prunable')), ...(locked !== undefined && { locked }) });
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
  /**
   * A worktree of a run's clone made again on the host the run moved to: its work as last pushed
   * (`origin`'s branch of that name, when there is one) and the commit it started from.
   */
  resume?: { remoteBranch: string; baseCommit?: string };
  /**
   * A fork's worktree (docs/forks.md): named for the fork's run, so the forked run's branch is
   * never touched; with a `snapshot`, started where the fork's restored steps left the worktree.
   */
  fork?: { run: string; snapshot?: string; baseCommit?: string };
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
  const resolved = await resolveRepository(request.repo, request.base);
  const { root, commonDir, base } = resolved;
  // Hardened with the repository's drivers made inert: `worktree add` checks files out (smudge filters).
  const git = await gitAt(root);
  const names = worktreeNames(root, request.plan, request.task, request.baseDir, request.fork?.run);
  const baseCommit = request.resume ? await resumeBranch(git, names.branch, request.resume, resolved.baseCommit) : await forkBase(git, request.fork, resolved.baseCommit);
  const snapshot = request.fork?.snapshot;
  const start = snapshot === undefined ? baseCommit : await snapshotParent(git, snapshot);
  const parent = path.dirname(names.path);
  await mkdir(parent, { recursive: true });
  // The base directory may be reached through symlinks: check where it really is.
  const target = path.join(await realpath(parent), path.basename(names.path));
  if (isInside(target, root)) throw permanent(ErrorTypes.BadToolInput, `baseDir: ${target} is inside the repository ${root}; worktrees go beside it`);
  const record: WorktreeMetadata = { base, baseCommit, ...(request.run && { run: request.run }), ...(request.step && { step: request.step }) };

  const work = async (lease: CheckoutLease): Promise<WorktreeInfo> => {
    const existing = (await worktreeEntries(git)).find((e) => e.path === target);
    if (existing && !existing.prunable) {
      const adopted = await adopt(git, root, existing, names.branch, base, baseCommit);
      // Its metadata is written last: without it, a killed attempt may not have restored the files yet.
      if (snapshot !== undefined && !(await readMetadata(target))) await restoreSnapshot(await gitAt(target), snapshot);
      await writeMetadata(target, record);
      return adopted;
    }
    if (existing?.prunable) await run(git, ['worktree', 'prune'], 'pruning worktrees whose directories are gone');
    await clearLeftover(target);
    // From here on, whatever is at the target is this `worktree add`'s: a retry after a kill clears it (clearHalfMade).
    await lease.note({ adding: true });
    try {
      await addWorktree(git, ['-b', names.branch, target, start]);
    } catch (err) {
      if (!/already exists/.test(String((err as Error).message))) throw gitFailure(err, `adding worktree ${target}`);
      // A branch kept from an earlier worktree of the same task: check it out again, if it grew from this base.
      if (!(await isAncestor(git, baseCommit, names.branch))) {
        throw permanent(ErrorTypes.WorktreeConflict, `branch ${names.branch} exists and does not start from ${base}; merge or delete it first`);
      }
      await addWorktree(git, [target, names.branch]).catch((e: unknown) => {
        throw gitFailure(e, `adding worktree ${target}`);
      });
    }
    if (snapshot !== undefined) await restoreSnapshot(await gitAt(target), snapshot);
    await writeMetadata(target, record);
    return { path: target, branch: names.branch, base, baseCommit, created: true };
  };
  return inCheckout({ checkout: target, commonDir, git }, { op: 'create', branch: names.branch }, work, { repair: (left) => clearHalfMade(git, target, left) });
}

/**
 * On the host a run moved to, the worktree's branch starts where its work was last pushed, and
 * counts from the commit it first started from (both reachable: the clone has the run's branch).
 * Returns that commit; with none recorded (the worktree was never made), the base's.
 */
async function resumeBranch(git: Git, branch: string, resume: NonNullable<CreateRequest['resume']>, baseCommit: string): Promise<string> {
  const from = resume.baseCommit ?? baseCommit;
  if ((await commitOf(git, from)) === undefined) throw permanent(ErrorTypes.WorktreeConflict, `the commit ${from} the worktree started from is not in this clone`);
  const pushed = await commitOf(git, `refs/remotes/origin/${resume.remoteBranch}`);
  if (pushed !== undefined && (await commitOf(git, `refs/heads/${branch}`)) === undefined) await run(git, ['branch', '--no-track', branch, pushed], `restoring branch ${branch} from its push`);
  return from;
}

/** A fork's worktree counts from the commit the forked run's worktree started from, when it had one. */
async function forkBase(git: Git, fork: CreateRequest['fork'], baseCommit: string): Promise<string> {
  const from = fork?.baseCommit;
  if (from === undefined) return baseCommit;
  if (!/^[0-9a-f]{40,64}$/.test(from) || (await commitOf(git, from)) === undefined) throw permanent(ErrorTypes.WorktreeConflict, `the commit ${from} the forked run's worktree started from is not in this repository`);
  return from;
}

/** A worktree of the same repository being made at this moment, which git read before it was whole. */
const ANOTHER_HALF_MADE = /failed to read .*worktrees\/[^/\s]+\/(commondir|gitdir)/;

/**
 * `git worktree add`, asked again when another `worktree add` in the same repository was half-way:
 * git reads every worktree's folder first, and gives up on one not yet written ("failed to read
 * .git/worktrees/t2/commondir"; two runs' worktrees made at once in CI). A `-b` that made its
 * branch before giving up finds it on the next try ("already exists"), as after a kill.
 */
async function addWorktree(git: Git, args: string[]): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await git.raw(['worktree', 'add', ...args]);
      return;
    } catch (err) {
      if (attempt >= 5 || !ANOTHER_HALF_MADE.test(String((err as Error).message))) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
}

/**
 * What a `git worktree add` killed with its worker made: a worktree git had not finished (still
 * locked, "initializing"), or a directory it had not registered yet. Removed, to be made again; the
 * branch, made first and holding nothing yet, stays and is checked out again.
 */
async function clearHalfMade(git: Git, target: string, left: CheckoutRecord): Promise<void> {
  if (left.op !== 'create' || !left.adding) return;
  const entry = (await worktreeEntries(git)).find((e) => e.path === target);
  if (entry && entry.locked === undefined) return;
  await rm(target, { recursive: true, force: true });
  if (!entry) return;
  await run(git, ['worktree', 'unlock', target], `unlocking the worktree a killed attempt was making at ${target}`);
  await run(git, ['worktree', 'prune'], 'pruning worktrees whose directories are gone');
}

/** The repository's main checkout, the base and its commit, in one git call. */
async function resolveRepository(repo: string, wanted: string | undefined): Promise<{ root: string; commonDir: string; base: string; baseCommit: string }> {
  const { root, commonDir, commit, current } = await locateRepository(repo, wanted ?? 'HEAD');
  const baseCommit = commit as string;
  // With no base given, the branch checked out (or, detached, its commit).
  const base = wanted ?? (current === 'HEAD' ? baseCommit : (current as string));
  return { root, commonDir, base, baseCommit };
}

/** What cadre keeps about a worktree it made, in the worktree's own git metadata directory (removed with it). */
export interface WorktreeMetadata {
  base: string;
  baseCommit: string;
  /** The run (workflow id) and step that made it. */
  run?: string;
  step?: string;
}

const METADATA_FILE = 'cadre.json';

/** The worktree's directory under the repository's `.git/worktrees`, from its `.git` link. */
async function metadataDir(worktree: string): Promise<string | undefined> {
  const link = await readFile(path.join(worktree, '.git'), 'utf8').catch(() => '');
  return link.startsWith('gitdir: ') ? path.resolve(worktree, link.slice(8).trim()) : undefined;
}

async function writeMetadata(worktree: string, metadata: WorktreeMetadata): Promise<void> {
  const dir = await metadataDir(worktree);
  if (!dir) throw permanent(ErrorTypes.WorktreeConflict, `${worktree}/.git does not link to a repository`);
  await writeFile(path.join(dir, METADATA_FILE), `${JSON.stringify(metadata)}\n`);
}

export async function readMetadata(worktree: string): Promise<WorktreeMetadata | undefined> {
  const dir = await metadataDir(worktree);
  if (!dir) return undefined;
  try {
    const parsed = JSON.parse(await readFile(path.join(dir, METADATA_FILE), 'utf8')) as Partial<WorktreeMetadata>;
    return typeof parsed.base === 'string' && typeof parsed.baseCommit === 'string' ? (parsed as WorktreeMetadata) : undefined;
  } catch {
    return undefined;
  }
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

export interface BaseOf {
  base: string;
  baseCommit: string;
}

/** The base recorded for a worktree cadre made. */
export async function baseOf(worktree: string): Promise<BaseOf> {
  const metadata = await readMetadata(worktree);
  if (!metadata) throw permanent(ErrorTypes.BadToolInput, `${worktree} was not made by cadre (no recorded base)`);
  return metadata;
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
  const { git, branch, root } = await openWorktree(request.path);
  const { base } = await baseOf(root);
  const status = await git.status();
  const staged = status.files.filter((f) => f.index !== ' ' && f.index !== '?').map((f) => f.path);
  const changed = status.files.filter((f) => f.working_dir !== ' ' && f.working_dir !== '?').map((f) => f.path);
  const untracked = status.not_added;
  const [ahead, behind] = await Promise.all([commitsIn(git, branch, base), commitsIn(git, base, branch)]);
  return { path: request.path, branch, clean: status.files.length === 0, staged, changed, untracked, ahead, behind };
}

/** The checkout at `dir`: a git client there, its top and its repository's common git directory. */
export async function locateWorktree(dir: string): Promise<{ git: Git; top: string; commonDir: string }> {
  const { top, commonDir } = await locateRepository(dir);
  return { git: await gitAt(top), top, commonDir };
}

/** The branch checked out at `dir`, and its commit; anything but a cadre branch is refused. */
export async function cadreHead(git: Git, dir: string): Promise<{ branch: string; commit: string }> {
  const [commit, branch] = (await run(git, ['rev-parse', 'HEAD', '--abbrev-ref', 'HEAD'], 'reading the branch')).trim().split('\n');
  if (!branch?.startsWith(CADRE_BRANCH_PREFIX)) throw permanent(ErrorTypes.BadToolInput, `path: ${dir} is not a cadre worktree (branch ${branch})`);
  return { branch, commit: commit as string };
}

/** A cadre worktree at `dir`: its git client and branch. Anything else is refused. */
export async function openWorktree(dir: string): Promise<{ git: Git; branch: string; root: string }> {
  const { git, top } = await locateWorktree(dir);
  return { git, branch: (await cadreHead(git, dir)).branch, root: top };
}
