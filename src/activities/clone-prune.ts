/**
 * A host's clones that no run needs any more (docs/operations.md, Workspaces any host can make):
 * clones of runs that ended, or that moved to another host while this one was away. Only a clone
 * whose work is all on its run's branch goes; any other stays, and the reason is said.
 */
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { gitAt, run } from '../git/git';
import type { WorkerHost } from './workspace-host';
import { CLONE_RUN_KEY, cloneWorktreesDir, clonesDir, runBranch } from './workspace-clone';
import { WORKSPACE_BLOB_DIR } from '../store/blobs';

/** What the server says of a run: open or not, and the host it is bound to. Undefined: no such run. */
export type RunState = { open: boolean; host?: string } | undefined;

export interface PruneReport {
  removed: string[];
  kept: { path: string; why: string }[];
}

export async function pruneClones(host: WorkerHost | undefined, runState: (run: string) => Promise<RunState>): Promise<PruneReport> {
  const dir = clonesDir(host);
  const report: PruneReport = { removed: [], kept: [] };
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    const clone = path.join(dir, name);
    const why = await whyKept(clone, host, runState).catch((err: Error) => `cannot be read: ${err.message}`);
    if (why) {
      report.kept.push({ path: clone, why });
      continue;
    }
    await rm(clone, { recursive: true, force: true });
    // Its worktrees' work was pushed with each step, as the clone's was: only what was pushed counts.
    await rm(cloneWorktreesDir(host, name), { recursive: true, force: true });
    report.removed.push(clone);
  }
  return report;
}

/** Why `clone` stays, or undefined when it can go. */
async function whyKept(clone: string, host: WorkerHost | undefined, runState: (run: string) => Promise<RunState>): Promise<string | undefined> {
  const git = await gitAt(clone);
  const runId = (await git.raw(['config', '--local', '--get', CLONE_RUN_KEY]).catch(() => '')).trim();
  if (!runId) return 'not a clone cadre recorded a run for';
  const state = await runState(runId);
  if (state?.open && (host === undefined || state.host === undefined || state.host === host.name)) return `run ${runId} is open here`;
  // Stored values never pushed belong to steps whose work was not pushed either, and which ran again
  // where the run went on (an agent's conversation among them: it is sent whole there).
  if ((await run(git, ['status', '--porcelain', '--', '.', `:(exclude)${WORKSPACE_BLOB_DIR}`], 'reading the clone')).trim() !== '') return `holds work never pushed (run ${runId} ${state?.open ? 'went on elsewhere' : 'ended'} without it)`;
  // Everything here is at the remote when a branch there holds HEAD: the run's (another host may
  // have pushed more since), or the one it was cloned from (nothing pushed yet).
  const branch = runBranch(runId);
  if ((await run(git, ['ls-remote', '--heads', 'origin', `refs/heads/${branch}`], 'reading the remote')).trim() !== '') {
    await run(git, ['fetch', '--quiet', 'origin', `+refs/heads/${branch}:refs/remotes/origin/${branch}`], `fetching ${branch}`);
  }
  const holding = (await run(git, ['branch', '--remotes', '--contains', 'HEAD'], 'reading the remote branches')).trim();
  return holding ? undefined : `holds commits not on ${branch} at the remote`;
}
