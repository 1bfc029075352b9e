/** `tool:` steps: the tool runs as an activity (or a local one), in the step's worktree when it has one. */
import { resolveTemplates } from '../../../plan-format/templates';
import type { ToolCall } from '../../../plan-format/types';
import { DEFAULT_STEP_TIMEOUT, runsLocally } from '../step-options';
import { callTool } from '../tool-call';
import type { StepKind } from './kind';

export const toolKind: StepKind = {
  kind: 'tool',
  chunked: true,
  // Not async: the tool's own promise is returned as it is (every tool step takes this path).
  run(run, step, scope, timeout, label) {
    const action = step.action as ToolCall;
    const params = resolveTemplates(action.with, scope, run.templates) as Record<string, unknown>;
    const call = {
      step,
      tool: action.tool,
      params,
      timeout: timeout ?? DEFAULT_STEP_TIMEOUT,
      label,
      workspace: run.plan.workspace,
      local: run.hardened && runsLocally(step, action.tool) && run.host.allowsLocal(),
      route: run.host.route,
      ids: run.activityIds,
      auditsProcessToolsOnly: run.lean,
      ...run.inline(),
      ...run.sandbox(),
    };
    if (!step.worktree) return callTool(call);
    return run.worktrees.lease(step.worktree, step.id).then((worktree) => callTool({ ...call, workspace: worktree.path, worktree: true }));
  },
};
