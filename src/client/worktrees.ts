/**
 * `cadre worktrees`: the worktrees cadre made in a repository, with whether their runs are still
 * open; and pruning those of closed runs that hold nothing unsaved.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { type CadreWorktree, listWorktrees, removeWorktree } from '../git';
import type { CadreClient } from './client';

export type ListedWorktree = CadreWorktree & { runOpen: boolean };

async function runIsOpen(client: CadreClient, run: string | undefined): Promise<boolean> {
  if (!run) return false;
  try {
    return (await client.client.workflow.getHandle(run).describe()).status.name === 'RUNNING';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

export async function runWorktrees(client: CadreClient, repo: string): Promise<ListedWorktree[]> {
  const worktrees = await listWorktrees({ repo });
  return Promise.all(worktrees.map(async (w) => ({ ...w, runOpen: await runIsOpen(client, w.run) })));
}

export interface PruneOutcome {
  path: string;
  branch: string;
  removed: boolean;
  /** Why it was kept, or what removal left (a branch with unmerged commits). */
  reason: string;
}

/** Removes the worktrees of closed runs; keeps (and says why) those of open runs and those with uncommitted work. */
export async function pruneWorktrees(client: CadreClient, repo: string): Promise<PruneOutcome[]> {
  const outcomes: PruneOutcome[] = [];
  for (const w of await runWorktrees(client, repo)) {
    const base = { path: w.path, branch: w.branch };
    if (w.runOpen) {
      outcomes.push({ ...base, removed: false, reason: `run ${w.run} is still open` });
      continue;
    }
    try {
      const result = await removeWorktree({ repo, path: w.path });
      outcomes.push({ ...base, removed: result.removed, reason: result.reason });
    } catch (err) {
      if (!(err instanceof ApplicationFailure)) throw err;
      outcomes.push({ ...base, removed: false, reason: err.message });
    }
  }
  return outcomes;
}
