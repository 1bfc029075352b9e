/**
 * What the model-turn and tool activities tell their stream (docs/streaming.md). The workflow
 * publishes what it sees in the activities' results (a turn's tool calls and end, tool results:
 * `lifecycle: 'workflow'`); the model-turn activity publishes what only it sees: the text as the
 * provider sends it, with the attempt's `message_start`, and a failed attempt's error. Runs
 * recorded before that publish every event here. The activity's result, not the stream, drives
 * the workflow: publishing never fails an activity.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { type StreamTarget, previewArgs, toolResultPreview } from '../protocol/stream';
import { StreamPublisher } from '../streaming/publisher';
import type { Redactor } from '../secrets/redact';
import type { ModelTurnResult, TurnListener } from '../providers/model-turn';

/** Text of one turn shown in the stream: past it, the answer is only in the result (message_complete says how much was shown). */
export const MAX_STREAMED_CHARS = 256 * 1024;

/** What a turn's attempt streamed, for the workflow to publish the rest to match (no text streamed: no `message_start` either). */
export interface TurnStreamed {
  attempt: number;
  /** Characters of text streamed. */
  chars: number;
  /** Characters of text the model wrote as it streamed: more than `chars` when the stream showed less. */
  textChars: number;
}

/** A model turn's events, as the turn goes. */
export class TurnStream implements TurnListener {
  private readonly publisher: StreamPublisher;
  private readonly byWorkflow: boolean;
  private started = false;
  /** Characters the model wrote, and those the stream took. */
  private chars = 0;
  private streamedChars = 0;

  constructor(
    target: StreamTarget,
    redactor: Redactor,
    private readonly model: string | undefined,
  ) {
    this.publisher = publisherFor(target, redactor);
    this.byWorkflow = target.lifecycle === 'workflow';
    if (!this.byWorkflow) this.start();
  }

  textDelta(text: string): void {
    const room = MAX_STREAMED_CHARS - this.chars;
    this.chars += text.length;
    if (room <= 0 || !this.publisher.takesText) return;
    this.start();
    const taken = text.length > room ? text.slice(0, room) : text;
    if (this.publisher.textDelta(taken)) this.streamedChars += taken.length;
  }

  completed(turn: ModelTurnResult): void {
    if (this.byWorkflow) return;
    for (const call of turn.toolCalls) this.publisher.event({ type: 'tool_call', callId: call.id, tool: call.name, args: previewArgs(call.args) });
    const cut = this.chars > this.streamedChars && { textChars: this.chars, streamedChars: this.streamedChars };
    this.publisher.event({ type: 'message_complete', finishReason: turn.finishReason, usage: turn.usage, toolCalls: turn.toolCalls.length, ...cut });
  }

  failed(err: unknown): void {
    this.start();
    this.publisher.event(errorEvent(err));
  }

  /** What this attempt streamed, for the turn's result. */
  streamed(): TurnStreamed {
    return { attempt: Context.current().info.attempt, chars: this.streamedChars, textChars: this.chars };
  }

  close(): Promise<void> {
    return this.publisher.close();
  }

  /** The attempt's `message_start`, once: at once in runs recorded earlier, else with its first text or its failure. */
  private start(): void {
    if (this.started) return;
    this.started = true;
    this.publisher.event({ type: 'message_start', ...(this.model && { model: this.model }) });
  }
}

/** A tool call's outcome, as a preview (runs recorded before the workflow published these). */
export async function publishToolResult(target: StreamTarget, redactor: Redactor, tool: string, outcome: { output: unknown } | { error: unknown }): Promise<void> {
  const publisher = publisherFor(target, redactor);
  publisher.event({ type: 'tool_result', callId: target.callId ?? '', tool, ...toolResultPreview('error' in outcome ? { error: messageOf(outcome.error) } : outcome) });
  await publisher.close();
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
