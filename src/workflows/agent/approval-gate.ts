/**
 * Whether an agent's tool call may run: its step's policy for the tool, and for shell the command
 * rules, judged on every command the shell would run by the `decideCommand` local activity (the
 * parser lives there; its decision is recorded in history, so replay needs no parser). The
 * strictest decision wins; policies handed down from a parent (a subtask's) count as well.
 * A person asked sees the call whole. Workflow code.
 */
import { proxyLocalActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { CommandDecision } from '../../commands/rules';
import type { ApprovalPolicy, Approvals } from '../../plan-format/types';
import type { AuditEvent } from './audit';
import { APPROVAL_CHOICES_ALWAYS, type ApprovalDetail } from '../../protocol/definitions';
import { type HumanWaits, splitAnswer } from '../plan/waits';

/** A call's arguments past this are not shown to a person, so they are not run on a person's word either. */
export const MAX_APPROVAL_ARGS_CHARS = 256 * 1024;
const PROMPT_COMMAND_CHARS = 200;

const STRICTNESS: Record<ApprovalPolicy, number> = { allow: 0, ask: 1, deny: 2 };

const decider = proxyLocalActivities<Activities>({ startToCloseTimeout: '30s', retry: { maximumAttempts: 3 }, summary: 'command rules' });

export interface GateSpec {
  label: string;
  approvals: Approvals;
  /** Policies of the agents above this one (a subtask's parent): none of them may be loosened. */
  inherited?: Approvals[];
  approvalTimeout: string;
}

interface Verdict {
  decision: ApprovalPolicy;
  reason: string;
  command?: string;
  segments?: ApprovalDetail['segments'];
}

export class ApprovalGate {
  /** Calls a person answered `always` to: exactly these (tool and arguments) run without asking again. */
  private readonly always = new Set<string>();
  /** Decisions of the current turn's commands, by command and rules, made in one local activity. */
  private decided = new Map<string, CommandDecision>();

  constructor(
    private readonly spec: GateSpec,
    private readonly waits: HumanWaits,
    private readonly waitsChanged: () => void,
    private readonly record: (event: Omit<AuditEvent, 'at' | 'step'>) => void,
  ) {}

  /**
   * Judges every shell command of a turn that meets command rules, in one local activity before
   * any of its calls runs: a turn of many calls costs one activity, not one each.
   */
  async prepare(calls: { tool: string; args: Record<string, unknown> }[]): Promise<void> {
    const items = new Map<string, { command: string; rules: object }>();
    for (const { tool, args } of calls) {
      if (typeof args.command !== 'string') continue;
      for (const approvals of [this.spec.approvals, ...(this.spec.inherited ?? [])]) {
        const policy = policyFor(approvals, tool);
        if (policy !== undefined && typeof policy === 'object') items.set(decisionKey(args.command, policy), { command: args.command, rules: policy });
      }
    }
    this.decided = new Map();
    if (items.size === 0) return;
    const decisions = await decider.decideCommands({ items: [...items.values()] });
    [...items.keys()].forEach((key, i) => this.decided.set(key, decisions[i]));
  }

  /** Undefined when the call may run; otherwise the denial the model reads, with its reason. */
  async check(tool: string, args: Record<string, unknown>, callId: string): Promise<string | undefined> {
    const verdict = await this.verdict(tool, args);
    if (verdict.decision === 'allow') return undefined;
    if (verdict.decision === 'deny') {
      this.record({ event: 'approval.decided', call: callId, tool, outcome: 'denied_by_policy' });
      return `denied: ${verdict.reason}`;
    }
    const key = `${tool}\u0000${JSON.stringify(args)}`;
    if (this.always.has(key)) {
      this.record({ event: 'approval.decided', call: callId, tool, outcome: 'approved_always' });
      return undefined;
    }
    const shown = JSON.stringify(args);
    if (shown.length > MAX_APPROVAL_ARGS_CHARS) {
      this.record({ event: 'approval.decided', call: callId, tool, outcome: 'denied_too_big' });
      return `denied: ${tool} needs a person's approval (${verdict.reason}), and its arguments (${shown.length} characters) are more than a person can be shown (${MAX_APPROVAL_ARGS_CHARS}): send less at once, e.g. write big content to a file first`;
    }
    const id = `${this.spec.label}/call-${callId}`;
    this.record({ event: 'approval.asked', call: callId, tool });
    const timeout = this.spec.approvalTimeout;
    // A shell call is shown as its command, whole, whatever policy asked.
    const command = verdict.command ?? (typeof args.command === 'string' ? args.command : undefined);
    const what = command !== undefined ? `${tool}: ${clip(oneLine(command), PROMPT_COMMAND_CHARS)}` : tool;
    const detail: ApprovalDetail = {
      tool,
      args: shown,
      reason: verdict.reason,
      ...(command !== undefined && { command }),
      ...(verdict.segments && { segments: verdict.segments }),
    };
    const value = await this.waits.wait(
      { id, kind: 'approval', prompt: `Allow ${what}? approve, always (this exact call from now on), or deny[:reason]`, choices: APPROVAL_CHOICES_ALWAYS, timeout, detail },
      { opened: () => this.waitsChanged(), closed: () => this.waitsChanged() },
    );
    if (value === undefined) {
      this.record({ event: 'approval.decided', call: callId, tool, outcome: 'timed_out' });
      return `denied: nobody approved ${tool} within ${timeout}`;
    }
    const { choice, extra } = splitAnswer(value);
    if (choice === 'always') this.always.add(key);
    this.record({ event: 'approval.decided', call: callId, tool, outcome: choice === 'approve' ? 'approved' : choice === 'always' ? 'approved_always' : 'denied' });
    if (choice === 'approve' || choice === 'always') return undefined;
    const reason = extra?.trim();
    return `denied by a person${reason ? `: ${reason}` : ''}`;
  }

  /** The strictest of every policy that applies, each command rule set judged by the activity. */
  private async verdict(tool: string, args: Record<string, unknown>): Promise<Verdict> {
    let verdict: Verdict = { decision: 'allow', reason: `${tool} is allowed` };
    for (const approvals of [this.spec.approvals, ...(this.spec.inherited ?? [])]) {
      const policy = policyFor(approvals, tool);
      if (policy === undefined) continue;
      const next = typeof policy === 'string' ? { decision: policy, reason: policyReason(policy, tool) } : await this.judge(tool, policy, args);
      if (STRICTNESS[next.decision] > STRICTNESS[verdict.decision] || (next.command !== undefined && verdict.command === undefined && next.decision === verdict.decision)) verdict = next;
    }
    return verdict;
  }

  private async judge(tool: string, rules: object, args: Record<string, unknown>): Promise<Verdict> {
    const command = args.command;
    if (typeof command !== 'string') return { decision: 'ask', reason: `${tool} has command rules but the call names no command` };
    const decided: CommandDecision = this.decided.get(decisionKey(command, rules)) ?? (await decider.decideCommands({ items: [{ command, rules }] }))[0];
    const segments = decided.segments.map((s) => ({ text: s.text, decision: s.decision, rule: s.rule }));
    const deciding = decided.segments.find((s) => s.decision === decided.decision);
    const verb = { allow: 'is allowed', ask: 'needs a person', deny: 'is denied' }[decided.decision];
    const reason = deciding
      ? `\`${clip(oneLine(deciding.text), PROMPT_COMMAND_CHARS)}\` ${verb}: ${whatDecided(deciding.rule, decided.decision)}`
      : decided.unparsable !== undefined
        ? `the command cannot be read as a shell command (${decided.unparsable}): a person looks`
        : `the rules say ${decided.decision}`;
    return { decision: decided.decision, reason, command, segments };
  }
}

/** A tool's policy; an MCP tool falls back to its server's `mcp:<server>/*`. No policy: listed tools are allowed. */
function policyFor(approvals: Approvals, tool: string): Approvals[string] | undefined {
  const server = /^mcp:[^/]+\//.exec(tool)?.[0];
  return approvals[tool] ?? (server ? approvals[`${server}*`] : undefined);
}

function policyReason(policy: ApprovalPolicy, tool: string): string {
  return policy === 'deny' ? `the approval policy of this step denies ${tool}` : policy === 'ask' ? `the approval policy of this step asks a person about ${tool}` : `${tool} is allowed`;
}

/** A rule (`git push: deny`) is named as one; the parser's own reasons (`runs ./x, …`, `writes f`, `computed: …`) read as they are. */
function whatDecided(rule: string, decision: string): string {
  if (rule === 'otherwise') return `no rule names it (otherwise: ${decision})`;
  return /^[^:]+: (allow|ask|deny)$/.test(rule) ? `the rule ${rule}` : rule;
}

function decisionKey(command: string, rules: object): string {
  return `${JSON.stringify(rules)}\u0000${command}`;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ⏎ ');
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters: see the whole call)` : text;
}
