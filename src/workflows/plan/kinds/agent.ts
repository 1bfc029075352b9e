/** `agent:` and `decide:` steps: an `agentTask` child workflow, in the step's worktree when it has one. */
import type { ToolResult } from '../../../activities';
import { MAX_PROMPT_BYTES } from '../../../plan-format/limits';
import { resolveTemplates } from '../../../plan-format/templates';
import type { CompiledStep, StepAction } from '../../../plan-format/types';
import { ApplicationFailure, ChildWorkflowFailure, workflowInfo } from '@temporalio/workflow';
import { StepFailedError } from '../../common/failures';
import type { Team } from '../../team/team';
import { withRole } from '../../../roles/team-roles';
import type { PlanRunContext, StepKind } from './kind';

type AgentAction = Extract<StepAction, { kind: 'agent' | 'decide' }>;

async function runAgent(run: PlanRunContext, step: CompiledStep, scope: Record<string, unknown>, timeout: string | undefined, label: string): Promise<ToolResult> {
  const action = step.action as AgentAction;
  const template = action.kind === 'agent' ? action.agent.prompt : action.decide.prompt;
  const text = run.asText(resolveTemplates(template, scope, run.templates), MAX_PROMPT_BYTES, 'prompt', promptText);
  const prompt = typeof text === 'string' ? text : await text;
  const worktree = step.worktree ? await run.worktrees.lease(step.worktree, step.id) : undefined;
  const record = run.record(step.id);
  record.attempts += 1;
  const member = run.team && (await teamMember(run, action));
  const id = run.activityIds.next(label).activityId ?? label;
  return budgetStopsAll(run, () => run.agents.run(
    {
      step,
      workflowId: `${workflowInfo().workflowId}/${id}`,
      input: {
        step: label,
        action: member?.action ?? action,
        prompt,
        workspace: worktree?.path ?? run.plan.workspace,
        ...(worktree && { worktree: true, storeWorkspace: run.plan.workspace, branch: worktree.branch }),
        ...(member && { team: member.team }),
        ...(run.agents.resumes.has(label) && { resume: run.agents.resumes.get(label) }),
        ...run.sandbox(),
      },
      ...(timeout !== undefined && { timeout }),
    },
    (summary) => {
      record.agent = summary;
      run.changed();
    },
  ));
}

/**
 * An agent the plan's budget stopped fails once the others have ended their turns (what those used
 * is counted): its failure aborts the run, which would cut them short. An agent its own budget
 * stopped fails at once: the plan's goes on.
 */
async function budgetStopsAll(run: PlanRunContext, agent: () => Promise<ToolResult>): Promise<ToolResult> {
  try {
    return await agent();
  } catch (err) {
    if (run.budget?.stopped && err instanceof ChildWorkflowFailure && err.cause instanceof ApplicationFailure && err.cause.type === 'BudgetExhausted') await run.budget.settled();
    throw err;
  }
}

/** A team's agent step takes its role's prompt, tools and approvals, and learns its team. */
async function teamMember(run: PlanRunContext, action: AgentAction) {
  const team = run.team as Team;
  if (action.kind !== 'agent') return undefined;
  const agent = withRole(action.agent, await team.roles(), run.plan.team?.model);
  if (typeof agent === 'string') throw new StepFailedError({ message: agent, timedOut: false, attempts: 0 });
  const role = action.agent.role;
  return { action: { kind: 'agent' as const, agent }, team: await team.worker(role, role !== undefined ? [role] : [], 0) };
}

/** A prompt read from a template: text as it is, anything else as JSON. */
function promptText(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
}

// Agents may wait on approvals; maxTurns and each call's own timeouts bound them.
export const agentKind: StepKind = { kind: 'agent', unbounded: true, run: runAgent };
export const decideKind: StepKind = { kind: 'decide', run: runAgent };
