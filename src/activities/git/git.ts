/**
 * The git CLI through simple-git, with cadre's error reading: a lock left by another git process
 * is worth a retry; anything else git refuses is permanent and says what was being done.
 */
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { type SimpleGit, simpleGit } from 'simple-git';
import { ErrorTypes, permanent, transient } from '../errors';

/** Who commits when the repository names no one: commits and merges still work on a bare machine. */
const FALLBACK_IDENTITY = { 'user.name': 'cadre', 'user.email': 'cadre@localhost' };

export type Git = SimpleGit;

/**
 * A git client in `dir`, with the fallback identity for whichever of user.name and user.email the
 * repository (or the machine) does not set. One git call reads both: every call costs a process.
 */
export async function gitAt(dir: string): Promise<Git> {
  const plain = simpleGit({ baseDir: dir });
  const configured = await plain.raw(['config', '--get-regexp', '^user\\.(name|email)$']).catch(() => '');
  const set = new Set(configured.split('\n').map((line) => line.split(' ')[0]));
  const missing = Object.entries(FALLBACK_IDENTITY).filter(([key]) => !set.has(key));
  return missing.length === 0 ? plain : simpleGit({ baseDir: dir, config: missing.map(([key, value]) => `${key}=${value}`) });
}

/** Runs git, turning its refusals into typed failures that name what was being done. */
export async function run(git: Git, args: string[], doing: string): Promise<string> {
  try {
    return await git.raw(args);
  } catch (err) {
    throw gitFailure(err, doing);
  }
}

export function gitFailure(err: unknown, doing: string) {
  const message = (err instanceof Error ? err.message : String(err)).trim().split('\n').slice(0, 6).join('; ');
  // git 2.39's merge says only "Unable to write index" when another process holds index.lock.
  if (/index\.lock|Unable to create .*\.lock|could not lock|Unable to write (new )?index/i.test(message)) {
    return transient(ErrorTypes.GitBusy, `${doing}: another git process holds a lock (${message})`);
  }
  return permanent(ErrorTypes.GitFailed, `${doing}: ${message}`);
}

export interface RepositoryLocation {
  /** The top of the checkout `repo` is in (a worktree's own top for a worktree), symlinks resolved. */
  top: string;
  /** The repository's main checkout (for a worktree, the repository it was made from). */
  root: string;
  /** With a `rev`: its commit, and the name of the branch checked out ("HEAD" when detached). */
  commit?: string;
  current?: string;
}

/**
 * Where `repo` is, in one git call; with `rev`, also that revision's commit and the current
 * branch. A missing path, a directory outside any repository or an unknown revision is a
 * permanent failure naming it.
 */
export async function locateRepository(repo: string, rev?: string): Promise<RepositoryLocation> {
  let dir: string;
  try {
    dir = await realpath(repo);
  } catch {
    throw permanent(ErrorTypes.BadToolInput, `repo: ${repo} does not exist`);
  }
  const args = ['rev-parse', '--show-toplevel', '--git-common-dir', ...(rev === undefined ? [] : [`${rev}^{commit}`, '--abbrev-ref', 'HEAD'])];
  let lines: string[];
  try {
    lines = (await simpleGit({ baseDir: dir }).raw(args)).trim().split('\n');
  } catch (err) {
    if (/not a git repository/i.test(String((err as Error).message))) throw permanent(ErrorTypes.BadToolInput, `repo: ${repo} is not a git repository`);
    throw permanent(ErrorTypes.BadToolInput, `base: "${rev}" names no commit in ${repo}`);
  }
  const [topLine, common, commit, current] = lines;
  if (!topLine) throw permanent(ErrorTypes.BadToolInput, `repo: ${repo} is not a git repository`);
  const top = await realpath(topLine);
  const commonDir = await realpath(path.resolve(top, common));
  const root = path.basename(commonDir) === '.git' ? path.dirname(commonDir) : commonDir;
  return { top, root, ...(rev !== undefined && { commit, current }) };
}

/** The top of the checkout at `repo`, symlinks resolved. */
export async function repositoryRoot(repo: string): Promise<string> {
  return (await locateRepository(repo)).top;
}

/** The main checkout of the repository `dir` belongs to (for a worktree, the repository it was made from). */
export async function mainRepositoryRoot(dir: string): Promise<string> {
  return (await locateRepository(dir)).root;
}

/** The commit a ref names, or undefined. */
export async function commitOf(git: Git, ref: string): Promise<string | undefined> {
  const out = await git.raw(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`]).catch(() => '');
  return out.trim() || undefined;
}

/**
 * Whether `ancestor` is reachable from `descendant`: no commit of the one is missing from the
 * other. (Not `merge-base --is-ancestor`: it answers by exit code alone, which simple-git does
 * not report when git prints nothing.)
 */
export async function isAncestor(git: Git, ancestor: string, descendant: string): Promise<boolean> {
  return (await commitsIn(git, ancestor, descendant)) === 0;
}

/** How many commits `from` has that `notIn` lacks. */
export async function commitsIn(git: Git, from: string, notIn: string): Promise<number> {
  return Number((await run(git, ['rev-list', '--count', from, `^${notIn}`], `counting commits of ${from}`)).trim());
}
