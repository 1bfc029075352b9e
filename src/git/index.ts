/** Git worktrees for tasks: create, inspect, commit, reset, merge back, remove, list. */
export { createWorktree, worktreeStatus, type CreateRequest, type WorktreeInfo, type WorktreeStatus } from './worktrees';
export { commitWorktree, resetWorktree, type CommitRequest } from './changes';
export { mergeWorktree, type MergeRequest, type MergeResult } from './merge';
export { listWorktrees, removeWorktree, type CadreWorktree, type RemoveRequest, type RemoveResult, type WorktreeState } from './cleanup';
