/**
 * An agent's approvals, as plans and role files write them: per tool `allow | deny | ask`, and for
 * `shell` a set of command rules (prefixes of words, judged on every command the shell would run;
 * see src/commands). Compiled to the object form; rule examples are checked when a plan loads.
 */
import { z } from 'zod';
import { checkRuleExamples, commandRuleSetSchema } from '../commands/rules';
import { normalizeRuleSet } from '../commands/rule-set';
import { MAX_STEP_ID_LENGTH } from './limits';
import { APPROVAL_POLICIES, type Approvals, type CompiledPlan } from './types';

const policy = z.enum(APPROVAL_POLICIES);

/** One tool's policy: a word, or (shell) command rules in either form. */
const toolPolicy = z.unknown().transform((value, ctx) => {
  const result = typeof value === 'string' ? policy.safeParse(value) : commandRuleSetSchema.safeParse(value);
  if (result.success) return result.data;
  const message =
    typeof value === 'string' || value === null || typeof value !== 'object'
      ? 'a policy is allow, deny or ask (shell also takes command rules: { rules: [{ prefix: [git, push], decision: ask }], otherwise: allow })'
      : undefined;
  for (const issue of result.error.issues) ctx.addIssue({ code: 'custom', message: message ?? issue.message, path: issue.path, input: value });
  return z.NEVER;
});

export const approvalsSchema = z.record(z.string().min(1).max(MAX_STEP_ID_LENGTH), toolPolicy);

/** Rule sets in their object form (`{ rules, otherwise }`), as workflows and the decision activity take them. */
export function compileApprovals(parsed: z.infer<typeof approvalsSchema>): Approvals {
  return Object.fromEntries(Object.entries(parsed).map(([tool, p]) => [tool, typeof p === 'string' ? p : normalizeRuleSet(p)])) as Approvals;
}

/** Rule examples of every agent step, at `steps[i].agent.approvals.shell.rules[j].match[k]`: the async part of validating a plan (it needs the shell parser). */
export async function planExampleIssues(plan: CompiledPlan): Promise<{ path: string; message: string }[]> {
  const issues: { path: string; message: string }[] = [];
  for (const [i, step] of plan.steps.entries()) {
    if (step.action.kind === 'agent') issues.push(...(await approvalExampleIssues(step.action.agent.approvals, `steps[${i}].agent.approvals`)));
  }
  return issues;
}

/** Every rule example (`match`, `notMatch`) its rule gets wrong, at `${at}.<tool>.rules[i].match[j]`. */
export async function approvalExampleIssues(approvals: Approvals | undefined, at: string): Promise<{ path: string; message: string }[]> {
  const issues: { path: string; message: string }[] = [];
  for (const [tool, p] of Object.entries(approvals ?? {})) {
    if (typeof p === 'object') issues.push(...(await checkRuleExamples(p, `${at}.${tool}`)));
  }
  return issues;
}
