/** The `git.*` tools: what a plan step does with the worktree it runs in. */
import type { GitCommitParams, GitMergeParams } from '../../plan-format/tools';
import { ErrorTypes, permanent } from '../../errors/application-failures';
import { commitWorktree, mergeWorktree, resetWorktree, worktreeStatus } from '../../git';
import { openWorktree } from '../../git/worktrees';
import type { ToolContext } from './context';

function worktreeOf(ctx: ToolContext, tool: string): string {
  if (ctx.boundary.name !== 'worktree') throw permanent(ErrorTypes.BadToolInput, `${tool} runs in a worktree: give the step a "worktree"`);
  return ctx.boundary.root;
}

export const gitStatusTool = (_params: unknown, ctx: ToolContext) => worktreeStatus({ path: worktreeOf(ctx, 'git.status') });

/** Back to the commit the worktree started from: its commits, changes and untracked files dropped. */
export const gitResetTool = (_params: unknown, ctx: ToolContext) => resetWorktree({ path: worktreeOf(ctx, 'git.reset') });

/** A retry of a call whose killed attempt made the commit reports that commit (ctx.call names the call). */
export const gitCommitTool = (params: GitCommitParams, ctx: ToolContext) =>
  commitWorktree({ path: worktreeOf(ctx, 'git.commit'), message: params.message, ...(params.all !== undefined && { all: params.all }), ...(ctx.call !== undefined && { call: ctx.call }) });

/** Merges the worktree's branch into its base (or `into`), in the repository it came from. */
export async function gitMergeTool(params: GitMergeParams, ctx: ToolContext) {
  const path = worktreeOf(ctx, 'git.merge');
  const { branch } = await openWorktree(path);
  return { branch, ...(await mergeWorktree({ repo: path, branch, ...(params.into !== undefined && { into: params.into }) })) };
}
