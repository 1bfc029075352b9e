/**
 * Workspaces any host can make (docs/operations.md, A fleet): a plan's `workspace: { repo, ref }`
 * is cloned by whichever host takes the run, into its workspace root, on a branch of the run's own
 * (`cadre/run/<run>`). Each step's work is committed and pushed to that branch before the step
 * ends, so a host that goes away takes no finished step's work with it: the host the run moves to
 * clones the branch and goes on from there.
 */
import { createHash } from 'node:crypto';
import { mkdir, realpath, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { cacheDir } from '../cache-dir';
import { ErrorTypes, permanent, transient } from '../errors/application-failures';
import type { CreateRequest } from '../git';
import { safeName as safeRefName } from '../git/names';
import { type Git, gitAt, run } from '../git/git';
import { hardenedGit } from '../git/hardened';
import { WORKSPACE_BLOB_DIR } from '../store/blobs';
import { isInside } from './confinement';
import { type WorkerHost, type WorkspaceHost, hostOf } from './workspace-host';

export interface CloneRequest {
  repo: string;
  ref?: string;
  /** The run's workflow id: names its folder and branch. */
  run: string;
  /** A host given up on (a lost one): it may not take the run back. */
  notOn?: string;
}

export interface ClonedWorkspace {
  /** The clone, on the host that made it. */
  path: string;
  /** The run's branch, pushed after each step. */
  branch: string;
  /** The commit the clone starts from. */
  commit: string;
  /** The run's branch had been pushed before (a moved run goes on from it); else `ref`. */
  resumed: boolean;
  /** The host that made it; null for a worker with no host (one machine, no fleet). */
  host: WorkspaceHost | null;
}

/** The branch a run's work is pushed to: readable, and unique for any workflow id. */
export function runBranch(run: string): string {
  return `cadre/run/${safeName(run)}`;
}

function safeName(run: string): string {
  const readable = run.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[.-]+/, '').replace(/\.lock$/, '_lock').slice(0, 80);
  return `${readable}-${createHash('sha256').update(run).digest('hex').slice(0, 8)}`;
}

/** Where this worker clones: its host's workspace root, CADRE_WORKSPACES, or cadre's cache. */
function workspaceRoot(host: WorkerHost | undefined): string {
  return path.resolve(host?.workspaces ?? (process.env.CADRE_WORKSPACES || path.join(cacheDir(), 'workspaces')));
}

/** The branch a run's worktree of `task` is pushed to, beside the run's own. */
export function worktreeBranch(run: string, task: string): string {
  return `cadre/worktree/${safeName(run)}/${safeRefName(task, 'task')}`;
}

/** Where the worktrees of the clone named `clone` go: beside the clones, never among them (clone-prune.ts reads every folder there). */
export function cloneWorktreesDir(host: WorkerHost | undefined, clone: string): string {
  return path.join(workspaceRoot(host), 'worktrees', clone);
}

/**
 * A worktree of one of this host's clones: made beside the clones, and on a host the run moved to,
 * from its branch as last pushed. Any other request is as it came.
 */
export async function inClone(host: WorkerHost | undefined, request: CreateRequest & { startedFrom?: string }): Promise<CreateRequest> {
  const { startedFrom, ...rest } = request;
  const runs = await realpath(clonesDir(host)).catch(() => undefined);
  const repo = await realpath(request.repo).catch(() => undefined);
  if (runs === undefined || repo === undefined || path.dirname(repo) !== runs || request.run === undefined) return rest;
  const resume = { remoteBranch: worktreeBranch(request.run, request.task), ...(startedFrom !== undefined && { baseCommit: startedFrom }) };
  return { ...rest, baseDir: cloneWorktreesDir(host, path.basename(repo)), resume };
}

/** The folder of this worker's clones. */
export function clonesDir(host: WorkerHost | undefined): string {
  return path.join(workspaceRoot(host), 'runs');
}

/** The clone's own git setting that names its run (clone-prune.ts reads it). */
export const CLONE_RUN_KEY = 'cadre.run';

/**
 * Clones the run's workspace here: its branch when pushed before, else `ref`. A folder left by an
 * earlier attempt, or by an earlier stay of the run on this host, is made again from the remote.
 */
export async function cloneWorkspace(host: WorkerHost | undefined, request: CloneRequest): Promise<ClonedWorkspace> {
  if (host && request.notOn === host.name) throw transient(ErrorTypes.WorkspaceNotHere, `host ${host.name} was given up on: another host clones the run`);
  const root = workspaceRoot(host);
  const dir = path.join(clonesDir(host), safeName(request.run));
  if (!isInside(dir, root)) throw permanent(ErrorTypes.BadToolInput, `run ${request.run} names no folder inside ${root}`);
  const branch = runBranch(request.run);
  await mkdir(path.dirname(dir), { recursive: true });
  const remote = hardenedGit(path.dirname(dir));
  const pushed = (await run(remote, ['ls-remote', '--heads', '--', request.repo, `refs/heads/${branch}`], `reading the branches of ${request.repo}`)).trim() !== '';
  const from = pushed ? branch : request.ref;
  await rm(dir, { recursive: true, force: true });
  await run(remote, ['clone', '--quiet', '--no-recurse-submodules', ...(from === undefined ? [] : ['--branch', from]), '--', request.repo, dir], `cloning ${request.repo}${from ? ` at ${from}` : ''}`);
  const git = await gitAt(dir);
  await run(git, ['config', '--local', CLONE_RUN_KEY, request.run], 'naming the run in the clone');
  if (!pushed) await run(git, ['checkout', '--quiet', '-b', branch], `making branch ${branch}`);
  const commit = (await run(git, ['rev-parse', 'HEAD'], 'reading the commit')).trim();
  return { path: await realpath(dir), branch, commit, resumed: pushed, host: host ? await hostOf(host) : null };
}

export interface CheckpointRequest {
  workspace: string;
  run: string;
  /** The step whose work this is: the commit's message. */
  step: string;
  /** The clone's worktree the step worked in: its work is committed and pushed with the workspace's. */
  worktree?: { path: string; branch: string; task: string };
}

/**
 * Commits whatever the workspace holds (its stored values too: later steps read them, on whichever
 * host), and the step's worktree, and pushes both at once (`--atomic`: a step's work is pushed
 * whole or not at all) to the run's branches. Nothing new is a push of the same commits, which
 * git skips. A retry after a kill commits what is left and pushes again: nothing is lost or doubled.
 */
export async function checkpointWorkspace(request: CheckpointRequest): Promise<{ commit: string; committed: boolean }> {
  const message = `cadre: step ${request.step} of run ${request.run}`;
  const git = await gitAt(request.workspace);
  await run(git, ['add', '--all', '--', '.', `:(exclude)${path.dirname(WORKSPACE_BLOB_DIR)}`], 'staging the step’s work');
  const blobs = path.join(request.workspace, WORKSPACE_BLOB_DIR);
  if (await stat(blobs).then((s) => s.isDirectory(), () => false)) await run(git, ['add', '--all', '--force', '--', WORKSPACE_BLOB_DIR], 'staging stored values');
  const committed = await commitStaged(git, message);
  const refs = [`HEAD:refs/heads/${runBranch(request.run)}`];
  const { worktree } = request;
  if (worktree) {
    const tree = await gitAt(worktree.path);
    await run(tree, ['add', '--all', '--', '.'], 'staging the worktree’s work');
    await commitStaged(tree, message);
    refs.push(`refs/heads/${worktree.branch}:refs/heads/${worktreeBranch(request.run, worktree.task)}`);
  }
  await run(git, ['push', '--quiet', '--no-verify', '--atomic', 'origin', ...refs], `pushing ${refs.map((r) => r.replace(/^.*:refs\/heads\//, '')).join(' and ')}`);
  return { commit: (await run(git, ['rev-parse', 'HEAD'], 'reading the commit')).trim(), committed };
}

/** Commits what is staged; whether there was anything. */
async function commitStaged(git: Git, message: string): Promise<boolean> {
  const staged = (await run(git, ['diff', '--cached', '--name-only'], 'reading staged changes')).trim() !== '';
  if (staged) await run(git, ['commit', '--quiet', '--no-verify', '-m', message], 'committing the step’s work');
  return staged;
}

/** A completed run's clone goes: its work is on the run's branch. Only a folder where this host clones runs. */
export async function removeClone(host: WorkerHost | undefined, workspace: string): Promise<{ removed: boolean }> {
  const runs = clonesDir(host);
  const real = await realpath(runs).catch(() => undefined);
  const dir = path.resolve(workspace);
  if (real === undefined || dir === real || !isInside(dir, real)) throw permanent(ErrorTypes.BadToolInput, `${workspace} is not a clone of this host (its clones are under ${runs})`);
  await rm(dir, { recursive: true, force: true });
  await rm(cloneWorktreesDir(host, path.basename(dir)), { recursive: true, force: true });
  return { removed: true };
}
