/**
 * The git CLI through simple-git, hardened (./hardened: nothing the repository configures runs),
 * with cadre's error reading (./failures).
 */
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { ErrorTypes, permanent } from '../errors/application-failures';
import { scanConfiguration } from './drivers';
import { gitFailure } from './failures';
import { type Git, hardenedGit } from './hardened';

export { gitFailure } from './failures';
export type { Git } from './hardened';

/** Who commits when the repository names no one: commits and merges still work on a bare machine. */
const FALLBACK_IDENTITY = { 'user.name': 'cadre', 'user.email': 'cadre@localhost' };

/**
 * A git client in `dir` for anything that may check out, stage, merge or look at files: every
 * driver the repository configures is made inert (./drivers), and the fallback identity fills
 * whichever of user.name and user.email the configuration does not set.
 */
export async function gitAt(dir: string, env?: Record<string, string>): Promise<Git> {
  const { keys, overrides } = await scanConfiguration(dir);
  const missing = Object.entries(FALLBACK_IDENTITY).filter(([key]) => !keys.has(key));
  return hardenedGit(dir, { config: missing.map(([key, value]) => `${key}=${value}`), overrides, ...(env && { env }) });
}

/** Runs git, turning its refusals into typed failures that name what was being done. */
export async function run(git: Git, args: string[], doing: string): Promise<string> {
  try {
    return await git.raw(args);
  } catch (err) {
    throw gitFailure(err, doing);
  }
}

export interface RepositoryLocation {
  /** The top of the checkout `repo` is in (a worktree's own top for a worktree), symlinks resolved. */
  top: string;
  /** The repository's main checkout (for a worktree, the repository it was made from). */
  root: string;
  /** The repository's common git directory (the main checkout's `.git`), symlinks resolved. */
  commonDir: string;
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
    // rev-parse reads no attributes and refreshes no index: the fixed settings are enough.
    lines = (await hardenedGit(dir).raw(args)).trim().split('\n');
  } catch (err) {
    if (/not a git repository/i.test(String((err as Error).message))) throw permanent(ErrorTypes.BadToolInput, `repo: ${repo} is not a git repository`);
    throw permanent(ErrorTypes.BadToolInput, `base: "${rev}" names no commit in ${repo}`);
  }
  const [topLine, common, commit, current] = lines;
  if (!topLine) throw permanent(ErrorTypes.BadToolInput, `repo: ${repo} is not a git repository`);
  const top = await realpath(topLine);
  const commonDir = await realpath(path.resolve(top, common));
  const root = path.basename(commonDir) === '.git' ? path.dirname(commonDir) : commonDir;
  return { top, root, commonDir, ...(rev !== undefined && { commit, current }) };
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
