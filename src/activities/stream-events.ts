/**
 * What the model-turn and tool activities tell their run's stream (docs/streaming.md): a turn's
 * start, text, tool calls, end or error, and a tool call's result, each with the attempt. The
 * activity's result, not the stream, drives the workflow: publishing never fails an activity.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { StreamTarget } from '../protocol/stream';
import { TOOL_RESULT_PREVIEW_CHARS } from '../streaming/events';
import { StreamPublisher } from '../streaming/publisher';
import type { Redactor } from '../secrets/redact';
import type { ModelTurnResult, TurnListener } from '../providers/model-turn';

/** Text of one turn shown in the stream: past it, the answer is only in the result (message_complete says how much was shown). */
export const MAX_STREAMED_CHARS = 256 * 1024;

/** A model turn's events: `message_start` at once; the rest as the turn goes. */
export class TurnStream implements TurnListener {
  private readonly publisher: StreamPublisher;
  private chars = 0;

  constructor(target: StreamTarget, redactor: Redactor, model: string | undefined) {
    this.publisher = publisherFor(target, redactor);
    this.publisher.event({ type: 'message_start', ...(model && { model }) });
  }

  textDelta(text: string): void {
    const room = MAX_STREAMED_CHARS - this.chars;
    this.chars += text.length;
    if (room > 0) this.publisher.textDelta(text.length > room ? text.slice(0, room) : text);
  }

  completed(turn: ModelTurnResult): void {
    for (const call of turn.toolCalls) this.publisher.event({ type: 'tool_call', callId: call.id, tool: call.name, args: previewArgs(call.args) });
    const cut = this.chars > MAX_STREAMED_CHARS && { textChars: this.chars, streamedChars: MAX_STREAMED_CHARS };
    this.publisher.event({ type: 'message_complete', finishReason: turn.finishReason, usage: turn.usage, toolCalls: turn.toolCalls.length, ...cut });
  }

  failed(err: unknown): void {
    this.publisher.event(errorEvent(err));
  }

  close(): Promise<void> {
    return this.publisher.close();
  }
}

/** A tool call's outcome, as a preview: the model and history keep the whole. */
export async function publishToolResult(target: StreamTarget, redactor: Redactor, tool: string, outcome: { output: unknown } | { error: unknown }): Promise<void> {
  const publisher = publisherFor(target, redactor);
  const isError = 'error' in outcome;
  const whole = isError ? messageOf(outcome.error) : typeof outcome.output === 'string' ? outcome.output : (JSON.stringify(outcome.output) ?? 'null');
  const preview = whole.length > TOOL_RESULT_PREVIEW_CHARS ? whole.slice(0, TOOL_RESULT_PREVIEW_CHARS) : whole;
  publisher.event({
    type: 'tool_result',
    callId: target.callId ?? '',
    tool,
    ...(isError && { isError: true }),
    preview,
    ...(preview.length < whole.length && { truncatedFrom: whole.length }),
  });
  await publisher.close();
}

/** Arguments as the stream shows them: each long string cut to a preview, saying how much is left out. */
function previewArgs(args: Record<string, unknown>): Record<string, unknown> {
  if ((JSON.stringify(args) ?? '').length <= TOOL_RESULT_PREVIEW_CHARS) return args;
  const clip = (v: unknown): unknown => {
    if (typeof v === 'string') return v.length > TOOL_RESULT_PREVIEW_CHARS ? `${v.slice(0, TOOL_RESULT_PREVIEW_CHARS)}… (${v.length - TOOL_RESULT_PREVIEW_CHARS} more characters)` : v;
    if (Array.isArray(v)) return v.map(clip);
    return v !== null && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, clip(x)])) : v;
  };
  return clip(args) as Record<string, unknown>;
}

function publisherFor(target: StreamTarget, redactor: Redactor): StreamPublisher {
  const ctx = Context.current();
  return new StreamPublisher({ client: ctx.client, target, attempt: ctx.info.attempt, redact: redactor, log: (message) => ctx.log.warn(message) });
}

function errorEvent(err: unknown) {
  const failure = err instanceof ApplicationFailure ? err : undefined;
  return { type: 'error' as const, errorType: failure?.type ?? (err instanceof Error ? err.name : 'Error'), message: messageOf(err), retryable: !failure?.nonRetryable };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
