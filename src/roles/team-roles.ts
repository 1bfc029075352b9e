/** An agent step of a team takes what its role file says, unless the step says otherwise. Pure. */
import type { TeamRole } from '../activities/roles';
import type { SandboxNarrowing, SandboxSpec } from '../sandbox/profile';
import type { AgentSpec } from '../plan-format/types';
import { narrowBudget } from '../protocol/budget';

export function withRole(agent: AgentSpec, roles: TeamRole[], teamModel: string | undefined): AgentSpec | string {
  const model = agent.model ?? teamModel;
  if (agent.role === undefined) return { ...agent, ...(model !== undefined && { model }) };
  const role = roles.find((r) => r.name === agent.role);
  if (!role) return `no role named "${agent.role}" (roles: ${roles.map((r) => r.name).join(', ')}; add roles/${agent.role}.yaml to the plan's folder)`;
  const roleModel = agent.model ?? role.model ?? teamModel;
  return {
    ...agent,
    system: agent.system ?? role.system,
    tools: agent.tools.length > 0 ? agent.tools : role.tools,
    approvals: { ...role.approvals, ...agent.approvals },
    ...(roleModel !== undefined && { model: roleModel }),
    ...(role.sandbox && { roleSandbox: role.sandbox }),
    ...(role.budget && { budget: narrowBudget(agent.budget, role.budget) }),
  };
}

/** The sandbox an agent's tool calls (and its subtasks) carry: the run's, then its role's narrowing. */
export function withinRole(spec: SandboxSpec | undefined, narrowing: SandboxNarrowing | undefined): SandboxSpec | undefined {
  if (!narrowing) return spec;
  return { ...spec, within: [...(spec?.within ?? []), narrowing] };
}
