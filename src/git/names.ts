/**
 * Worktree paths and branch names from plan and task names: readable, safe as one path
 * component and as one ref component, and distinct for distinct names (a name that had to be
 * changed gets a short hash of the original).
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import { isInside } from '../processes/path-inside';
import { ErrorTypes, permanent } from '../errors/application-failures';

const MAX_NAME = 60;

export function safeName(name: string, field: string): string {
  if (typeof name !== 'string' || name.trim() === '') throw permanent(ErrorTypes.BadToolInput, `${field}: must be a non-empty name`);
  const cleaned = name
    .normalize('NFKC')
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/\.{2,}/g, '.')
    .replace(/^[-.]+|[-.]+$/g, '')
    .replace(/\.lock$/i, '-lock')
    .slice(0, MAX_NAME);
  if (cleaned === name) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
  return cleaned ? `${cleaned}-${hash}` : hash;
}

/**
 * Where cadre keeps a repository's worktrees by default: under `CADRE_WORKTREE_DIR` on the worker
 * when set, else beside the repository; never inside it.
 */
export function defaultWorktreeBase(repoRoot: string): string {
  const configured = process.env.CADRE_WORKTREE_DIR;
  return path.join(configured ? path.resolve(configured) : path.join(path.dirname(repoRoot), '.cadre-worktrees'), path.basename(repoRoot));
}

export interface WorktreeNames {
  path: string;
  branch: string;
}

/** `fork`: a fork's run, whose worktrees are its own (`<task>@<run>`), never the forked run's. */
export function worktreeNames(repoRoot: string, plan: string, task: string, baseDir?: string, fork?: string): WorktreeNames {
  const p = safeName(plan, 'plan');
  const t = fork === undefined ? safeName(task, 'task') : `${safeName(task, 'task')}@${safeName(fork, 'run')}`;
  const base = baseDir ? path.resolve(baseDir) : defaultWorktreeBase(repoRoot);
  if (isInside(base, repoRoot)) throw permanent(ErrorTypes.BadToolInput, `baseDir: ${base} is inside the repository ${repoRoot}; worktrees go beside it`);
  return { path: path.join(base, p, t), branch: `cadre/${p}/${t}` };
}

