/**
 * The stream events an agent's workflow publishes itself, from what its activities return: a
 * turn's tool calls and end, and each tool call's result. They cost no signal and no history
 * (docs/streaming.md); the model-turn activity publishes only the text as it comes, with its
 * attempt's `message_start`. Results are redacted by the activities before they return.
 */
import type { ModelTurnResult } from '../activities';
import { isStored, describeStored } from '../plan-format/refs';
import { previewArgs, toolResultPreview } from '../protocol/stream';
import type { OwnEvent } from './events';

export class TurnEvents {
  constructor(
    private readonly label: string,
    private readonly publish: (event: OwnEvent) => void,
  ) {}

  /** A turn that came back: its `message_start` when the attempt streamed no text, its tool calls, its end. */
  turnEnded(turn: number, result: ModelTurnResult, model: string | undefined): void {
    const at = { step: this.label, turn, ...(result.streamed && { attempt: result.streamed.attempt }) };
    const streamedChars = result.streamed?.chars ?? 0;
    if (streamedChars === 0) this.publish({ type: 'message_start', ...at, ...(model !== undefined && { model }) });
    for (const call of result.toolCalls) this.publish({ type: 'tool_call', ...at, callId: call.id, tool: call.name, args: previewArgs(shown(call.args) as Record<string, unknown>) });
    const textChars = result.streamed?.textChars ?? 0;
    const cut = textChars > streamedChars && { textChars, streamedChars };
    const shortened = result.shortened && { shortened: result.shortened };
    this.publish({ type: 'message_complete', ...at, finishReason: result.finishReason, usage: result.usage, toolCalls: result.toolCalls.length, ...cut, ...shortened });
  }

  /** A tool call's outcome, as a preview (the model and history keep the whole). */
  toolEnded(turn: number, callId: string, tool: string, outcome: { output: unknown; attempt?: number } | { error: string }): void {
    const attempt = 'attempt' in outcome && outcome.attempt ? { attempt: outcome.attempt } : {};
    const preview = toolResultPreview('error' in outcome ? outcome : { output: shown(outcome.output) });
    this.publish({ type: 'tool_result', step: this.label, turn, ...attempt, callId, tool, ...preview });
  }
}

/** Values stored outside history (big arguments, outputs) shown as what they are, not as references. */
function shown(value: unknown): unknown {
  if (isStored(value)) return `(${describeStored(value)})`;
  if (Array.isArray(value)) return value.map(shown);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shown(v)]));
  return value;
}
