/**
 * What an agent said and did, read back from its workflow's history: each model turn's text and
 * calls, and each tool call's result. For reading why a model failed a benchmark task (the audit
 * log holds no content by design); the bench's own workflows carry no encryption codec.
 */
import type { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';

type Payload = temporal.api.common.v1.IPayload;

const MAX_SHOWN = 1500;
/** A turn that failed so: the reply held no call that could be read (words in place of a call, or a call cut short). */
const UNREAD_REPLIES = new Set(['ToolChoiceIgnored', 'ModelOutputCut']);

export interface Transcript {
  text: string;
  /** Model replies that did not parse as an offered call: a call written as text nothing read, or arguments that were not JSON, an unknown tool, arguments that did not match. */
  unparsed: number;
}

export async function agentTranscript(client: Client, workflowId: string): Promise<Transcript> {
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const scheduled = new Map<string, { type: string; id: string; input: unknown }>();
  const lines: string[] = [];
  let unparsed = 0;
  for (const event of events) {
    const s = event.activityTaskScheduledEventAttributes;
    if (s) {
      scheduled.set(String(event.eventId), { type: s.activityType?.name ?? '?', id: s.activityId ?? '', input: decoded(s.input?.payloads?.[0]) });
      continue;
    }
    const done = event.activityTaskCompletedEventAttributes ?? event.activityTaskFailedEventAttributes;
    if (!done) continue;
    const activity = scheduled.get(String(done.scheduledEventId));
    if (!activity) continue;
    const failed = event.activityTaskFailedEventAttributes?.failure;
    const failure = failed?.message;
    const result = 'result' in done ? decoded(done.result?.payloads?.[0]) : undefined;
    if (activity.type === 'modelTurn' || activity.type === 'modelTurnChained') {
      const turn = result as { text?: string; toolCalls?: { name: string; args: unknown; error?: string }[]; unparsedToolCall?: unknown } | undefined;
      const unread = UNREAD_REPLIES.has(failed?.applicationFailureInfo?.type ?? '');
      if (unread || turn?.unparsedToolCall || turn?.toolCalls?.some((c) => c.error !== undefined && /^(the arguments|no tool named)/.test(c.error))) unparsed++;
      lines.push(`--- model${failure ? ` failed: ${failure}` : ''}`);
      if (turn?.text) lines.push(shown(turn.text));
      for (const call of turn?.toolCalls ?? []) lines.push(`call ${call.name} ${shown(JSON.stringify(call.args))}${call.error ? `\n  (cannot run: ${call.error})` : ''}`);
    } else if (activity.type === 'runTool') {
      const output = (result as { output?: unknown } | undefined)?.output;
      // The step's verify runs as a shell call of its own (workflows/agent/verify-gate.ts).
      const tool = /\/verify\.\d+$/.test(activity.id) ? 'verify' : ((activity.input as { tool?: string }).tool ?? 'tool');
      lines.push(`--- ${tool}: ${failure ? `error: ${failure}` : shown(typeof output === 'string' ? output : JSON.stringify(output))}`);
    }
  }
  return { text: lines.join('\n'), unparsed };
}

function decoded(payload: Payload | undefined): unknown {
  if (!payload) return undefined;
  try {
    return defaultPayloadConverter.fromPayload(payload);
  } catch {
    return '(not readable)';
  }
}

function shown(text: string): string {
  return text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}… (${text.length} characters)` : text;
}
