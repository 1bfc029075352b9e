/** `agent:` steps: an LLM agent, model turn → tool calls → model turn, until its final answer. */
import { z } from 'zod';
import { DEFAULT_WARN_AT } from '../../protocol/budget';
import { MAX_MUST_CHANGE } from '../../protocol/made-no-change';
import { DEFAULT_VERIFY_ATTEMPTS, DEFAULT_VERIFY_TIMEOUT, MAX_VERIFY_ATTEMPTS } from '../../protocol/verify';
import { approvalsSchema, compileApprovals } from '../approvals';
import { agentBudget, duration, modelName } from '../fields';
import { MAX_STEP_ID_LENGTH } from '../limits';
import { DEFAULT_AGENT_TURNS, DEFAULT_APPROVAL_TIMEOUT, MAX_AGENT_TURNS } from '../types';
import { brief, planKind } from './kind';
import { modelAt } from './model-path';

/** The built-in tools that change a workspace: what `mustChange` counts. */
export const CHANGING_TOOLS = ['fs.write', 'fs.edit', 'shell'];

/** A file a step must change, as its tools name it: inside the workspace. */
const changedFile = z
  .string()
  .min(1)
  .max(4096)
  .refine((file) => !file.includes('\0') && !file.startsWith('/') && !file.split(/[\\/]/).includes('..'), 'a file to change is a path inside the workspace: relative, without ".." or NUL bytes');

/** A command that must pass before the agent's answer is taken (protocol/verify.ts). */
const verifyCommand = z.string().trim().min(1, 'verify needs a command').max(8192);
const verifySchema = z.union([
  verifyCommand,
  z.strictObject({ command: verifyCommand, attempts: z.int().min(0).max(MAX_VERIFY_ATTEMPTS).optional(), timeout: duration.optional() }),
]);

export const agentSchema = z
  .strictObject({
    role: z.string().min(1).max(MAX_STEP_ID_LENGTH).optional(),
    prompt: z.string().min(1),
    system: z.string().min(1).optional(),
    /** Built-in tools the agent may call (fs.read, shell, ...); none: it only answers. */
    tools: z.array(z.string().min(1)).max(64).optional(),
    model: modelName.optional(),
    maxTurns: z.int().min(1).max(MAX_AGENT_TURNS).optional(),
    /** Input plus output tokens over every turn; past it the step fails. */
    maxTokens: z.int().min(1).optional(),
    /** Caps its turns are held to before they start (docs/budgets.md). */
    budget: agentBudget.optional(),
    /** A JSON Schema the final answer must match; the answer becomes the step's output as JSON. */
    output: z.record(z.string(), z.unknown()).optional(),
    /** Per tool `allow | deny | ask`; `shell` may take command rules (approvals.ts). */
    approvals: approvalsSchema.optional(),
    /** How long an `ask` approval waits before it counts as denied. */
    approvalTimeout: duration.optional(),
    /** The task is a change (true), or a change of each file listed: an answer before it fails the step (AgentMadeNoChange). */
    mustChange: z.union([z.boolean(), z.array(changedFile).min(1).max(MAX_MUST_CHANGE)]).optional(),
    /** A command (its tests) that must pass before the answer is taken: its failures go back to the agent, then fail the step (AgentVerifyFailed). */
    verify: verifySchema.optional(),
  })
  .refine((a) => a.mustChange === undefined || a.mustChange === false || a.role !== undefined || (a.tools ?? []).some((t) => CHANGING_TOOLS.includes(t)), {
    path: ['mustChange'],
    error: `mustChange needs a tool that changes the workspace among the agent's tools: ${CHANGING_TOOLS.join(', ')}`,
  });

export const agentKind = planKind({
  kind: 'agent',
  fields: { agent: agentSchema },
  compile: ({ agent }, baseDir) => {
    const { tools = [], maxTurns = DEFAULT_AGENT_TURNS, approvals = {}, approvalTimeout = DEFAULT_APPROVAL_TIMEOUT, budget, mustChange, verify, ...rest } = agent;
    const compiled = {
      ...rest,
      ...(rest.model && { model: modelAt(rest.model, baseDir) }),
      tools,
      maxTurns,
      approvals: compileApprovals(approvals),
      approvalTimeout,
      ...(mustChange && { mustChange }),
      ...(verify !== undefined && { verify: typeof verify === 'string' ? { command: verify, attempts: DEFAULT_VERIFY_ATTEMPTS, timeout: DEFAULT_VERIFY_TIMEOUT } : { attempts: DEFAULT_VERIFY_ATTEMPTS, timeout: DEFAULT_VERIFY_TIMEOUT, ...verify } }),
    };
    return { kind: 'agent', agent: { ...compiled, ...(budget && { budget: { warnAt: DEFAULT_WARN_AT, onBudget: 'ask' as const, ...budget } }) } };
  },
  templated: ['agent'],
  // Its turns live in its own child workflow's history: the plan pays one child per run of the step.
  cost: (action) => ({ unit: 'child', input: action }),
  describe: ({ agent }) => `agent${agent.role ? ` (${brief(agent.role, 40)})` : ''}${agent.tools.length ? ` with ${agent.tools.join(', ')}` : ''}`,
});
