/**
 * How agents started before command rules (patch command-rules) decide a tool call: the step's
 * approval globs in the workflow, first match wins, a person asked with the arguments shown. Kept
 * so their histories replay; new agents use the ApprovalGate. Workflow code.
 */
import { approvalFor } from '../../plan-format/approval-policy';
import type { Approvals } from '../../plan-format/types';
import { APPROVAL_CHOICES } from '../../protocol/definitions';
import { type HumanWaits, splitAnswer } from '../plan/waits';
import type { AuditEvent } from './audit';
import { clip } from './loop-activities';

/** Arguments shown in an approval's prompt: enough to decide, never a whole file. */
const MAX_PROMPT_ARGS_CHARS = 2000;

export interface GlobApprovalContext {
  label: string;
  approvals: Approvals;
  approvalTimeout: string;
  waits: HumanWaits;
  waitsChanged(): void;
  record(event: Omit<AuditEvent, 'at' | 'step'>): void;
}

/** Undefined when the call may run; otherwise what the model is told. */
export async function globApproval(ctx: GlobApprovalContext, tool: string, args: Record<string, unknown>, callId: string): Promise<string | undefined> {
  const policy = approvalFor(ctx.approvals, tool, args);
  if (policy === 'allow') return undefined;
  if (policy === 'deny') {
    ctx.record({ event: 'approval.decided', call: callId, tool, outcome: 'denied_by_policy' });
    return `denied: the approval policy of this step denies ${tool} for these arguments`;
  }
  const id = `${ctx.label}/call-${callId}`;
  ctx.record({ event: 'approval.asked', call: callId, tool });
  const shown = clip(JSON.stringify(args), MAX_PROMPT_ARGS_CHARS);
  const timeout = ctx.approvalTimeout;
  const value = await ctx.waits.wait(
    { id, kind: 'approval', prompt: `Allow ${tool} with ${shown}? approve, or deny[:reason]`, choices: APPROVAL_CHOICES, timeout },
    { opened: () => ctx.waitsChanged(), closed: () => ctx.waitsChanged() },
  );
  if (value === undefined) {
    ctx.record({ event: 'approval.decided', call: callId, tool, outcome: 'timed_out' });
    return `denied: nobody approved ${tool} within ${timeout}`;
  }
  const { choice, extra } = splitAnswer(value);
  ctx.record({ event: 'approval.decided', call: callId, tool, outcome: choice === 'approve' ? 'approved' : 'denied' });
  if (choice === 'approve') return undefined;
  const reason = extra?.trim();
  return `denied by a person${reason ? `: ${reason}` : ''}`;
}
