/**
 * `cadre team <goal-or-plan>`: a plan file runs as a team (its agents become workers), and a goal
 * becomes a one-step team plan whose lead takes the role the router picks for it. The lead asks
 * specialists with ask_question and hands work out with spawn_subtask.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { loadRoles } from '../roles/roles';
import { type RoleSuggestion, suggestRole } from '../roles/router';
import { PlanError, loadPlan } from '../plan-format/load';
import { type CompiledPlan, TEAM_DEFAULTS } from '../plan-format/types';
import { validatePlan } from '../plan-format/validate';

const FALLBACK_LEAD = 'implementer';

export interface TeamStart {
  plan: CompiledPlan;
  inputs: Record<string, unknown>;
  /** For a goal: the lead's role and why. */
  lead?: RoleSuggestion;
}

export async function teamStart(goalOrPlan: string, cwd: string): Promise<TeamStart> {
  if (/\.(ya?ml|json)$/i.test(goalOrPlan) && existsSync(path.resolve(cwd, goalOrPlan))) {
    const plan = await loadPlan(goalOrPlan, cwd);
    return { plan: plan.team ? plan : { ...plan, team: TEAM_DEFAULTS }, inputs: {} };
  }
  const roles = await loadRoles();
  const lead = suggestRole(goalOrPlan, roles)[0] ?? { role: FALLBACK_LEAD, score: 0, matched: [] };
  const doc = {
    name: 'team',
    description: 'A goal handed to a team: its lead works on it, asks specialists, starts subtasks.',
    inputs: { goal: { type: 'string' } },
    team: {},
    steps: [{ id: 'lead', agent: { role: lead.role, prompt: '{{ inputs.goal }}' } }],
    output: '{{ steps.lead.output }}',
  };
  const result = validatePlan(doc, { baseDir: cwd });
  if (!result.ok) throw new PlanError('the team plan for this goal', result.issues);
  return { plan: result.plan, inputs: { goal: goalOrPlan }, lead };
}
