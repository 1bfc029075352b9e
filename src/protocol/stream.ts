/**
 * A run's stream (docs/streaming.md): offset logs of events hosted by Temporal's Workflow Streams
 * (`@temporalio/workflow-streams`), so any Temporal client can read them with the standard poll
 * update; cadre's own readers use the `stream` query, which adds no history. A plan run's stream
 * holds its steps, waits and end, and says where each of its agents' streams is (`agent_started`):
 * an agent's turns, text and tool calls go to a stream on the agent's own workflow, whose limits
 * are its own. A session's stream holds everything.
 */
import { defineQuery } from '@temporalio/workflow';

/** The topic every cadre event is published on. */
export const STREAM_TOPIC = 'events';

/** Where a model turn or tool call publishes its events: the workflow that hosts the stream, and who is speaking. */
export interface StreamTarget {
  /** The workflow that hosts the stream: the agent itself, or the session (runs recorded earlier: the plan run). */
  workflowId: string;
  step: string;
  turn: number;
  /** A tool call's id, as the model gave it. */
  callId?: string;
  /**
   * The workflow publishes the turn's tool calls, its end and its tool results itself, from the
   * activities' results: the activity publishes only what the workflow cannot see, the text as it
   * comes (with the turn's `message_start`) and failed attempts. Absent in runs recorded earlier.
   */
  lifecycle?: 'workflow';
  /** The batches of text this turn may send, when its host's budget is running out; 0 sends no text. */
  maxBatches?: number;
}

export interface StreamRead {
  /** The first offset wanted. */
  from: number;
  /** At most this many events (default and cap: STREAM_PAGE_EVENTS). */
  max?: number;
}

export interface StreamPage {
  /** Events from `from` (or from `base`, when older ones were trimmed), each with its `offset`. */
  events: ({ offset: number } & Record<string, unknown>)[];
  /** The offset to read from next. */
  next: number;
  /** The oldest offset still held: a reader that asked for less missed what lies between. */
  base: number;
  /** True when more events are ready now (the page was full). */
  more: boolean;
}

export const STREAM_PAGE_EVENTS = 500;

/** A tool result shown in the stream: enough to follow along, never a whole file. */
export const TOOL_RESULT_PREVIEW_CHARS = 2000;

/** A tool call's outcome as the stream shows it: a preview (the model and history keep the whole). */
export function toolResultPreview(outcome: { output: unknown } | { error: string }): { preview: string; isError?: true; truncatedFrom?: number } {
  const isError = 'error' in outcome;
  const whole = isError ? outcome.error : typeof outcome.output === 'string' ? outcome.output : (JSON.stringify(outcome.output) ?? 'null');
  const preview = whole.length > TOOL_RESULT_PREVIEW_CHARS ? whole.slice(0, TOOL_RESULT_PREVIEW_CHARS) : whole;
  return { ...(isError && { isError: true as const }), preview, ...(preview.length < whole.length && { truncatedFrom: whole.length }) };
}

/** Arguments as the stream shows them: each long string cut to a preview, saying how much is left out. */
export function previewArgs(args: Record<string, unknown>): Record<string, unknown> {
  if ((JSON.stringify(args) ?? '').length <= TOOL_RESULT_PREVIEW_CHARS) return args;
  const clip = (v: unknown): unknown => {
    if (typeof v === 'string') return v.length > TOOL_RESULT_PREVIEW_CHARS ? `${v.slice(0, TOOL_RESULT_PREVIEW_CHARS)}… (${v.length - TOOL_RESULT_PREVIEW_CHARS} more characters)` : v;
    if (Array.isArray(v)) return v.map(clip);
    return v !== null && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, clip(x)])) : v;
  };
  return clip(args) as Record<string, unknown>;
}

export const streamQuery = defineQuery<StreamPage, [StreamRead]>('stream');
/** Workflow Streams' own query: the offset the next event will have. */
export const streamOffsetQuery = defineQuery<number>('__temporal_workflow_stream_offset');
