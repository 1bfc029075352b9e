/**
 * A worktree as a step left it, kept for forks (docs/forks.md): a commit of all its files,
 * uncommitted ones included, whose parent is the branch's commit, made through a scratch index so
 * the worktree, its index and its branch are untouched. A ref per run and step keeps it from git's
 * garbage collection. A fork's worktree starts from it: on the parent, with the rest as the
 * uncommitted changes they were.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ErrorTypes, permanent } from '../errors/application-failures';
import { type Git, commitOf, gitAt, locateRepository, run } from './git';
import { safeName } from './names';

export interface SnapshotRequest {
  /** The worktree. */
  path: string;
  /** The run (workflow id) and step whose end it records: they name its ref. */
  run: string;
  step: string;
}

export const SNAPSHOT_REF_PREFIX = 'refs/cadre/steps/';

/** Returns the snapshot's commit; its parent is the branch's commit now. */
export async function snapshotWorktree(request: SnapshotRequest): Promise<string> {
  const { top } = await locateRepository(request.path);
  const scratch = await mkdtemp(path.join(tmpdir(), 'cadre-snapshot-'));
  try {
    // Every file git would see (ignored ones not), staged in an index of its own.
    const git = await gitAt(top, { GIT_INDEX_FILE: path.join(scratch, 'index') });
    await run(git, ['read-tree', 'HEAD'], 'reading the worktree’s commit');
    await run(git, ['add', '--all'], 'staging the worktree’s files for its snapshot');
    const tree = (await run(git, ['write-tree'], 'writing the snapshot’s tree')).trim();
    const message = `cadre: worktree after step ${request.step} of run ${request.run}`;
    const snapshot = (await run(git, ['commit-tree', tree, '-p', 'HEAD', '-m', message], 'writing the snapshot')).trim();
    const ref = `${SNAPSHOT_REF_PREFIX}${safeName(request.run, 'run')}/${safeName(request.step, 'step')}`;
    await run(git, ['update-ref', ref, snapshot], `keeping the snapshot as ${ref}`);
    return snapshot;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** The commit a worktree restored from `snapshot` is on: the branch's commit when it was taken. */
export async function snapshotParent(git: Git, snapshot: string): Promise<string> {
  const parent = /^[0-9a-f]{40,64}$/.test(snapshot) ? await commitOf(git, `${snapshot}^`) : undefined;
  if (parent === undefined) throw permanent(ErrorTypes.WorktreeConflict, `the snapshot ${snapshot} of the worktree to restore is not in this repository (was its ref under ${SNAPSHOT_REF_PREFIX} deleted?)`);
  return parent;
}

/** The snapshot's files put into a worktree made on its parent, as the uncommitted changes they were. Safe to repeat. */
export async function restoreSnapshot(git: Git, snapshot: string): Promise<void> {
  await run(git, ['restore', `--source=${snapshot}`, '--worktree', '--', '.'], `restoring the worktree’s files from ${snapshot}`);
}
