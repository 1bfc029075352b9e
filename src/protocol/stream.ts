/**
 * A run's stream (docs/streaming.md): an offset log of events hosted in the run's own workflow by
 * Temporal's Workflow Streams (`@temporalio/workflow-streams`), so any Temporal client can read it
 * with the standard poll update; cadre's own readers use the `stream` query, which adds no history.
 */
import { defineQuery } from '@temporalio/workflow';

/** The topic every cadre event is published on. */
export const STREAM_TOPIC = 'events';

/** Where a model turn or tool call publishes its events: the run's workflow, and who is speaking. */
export interface StreamTarget {
  /** The workflow that hosts the stream: the plan run (for its agents too) or the session. */
  workflowId: string;
  step: string;
  turn: number;
  /** A tool call's id, as the model gave it. */
  callId?: string;
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

export const streamQuery = defineQuery<StreamPage, [StreamRead]>('stream');
/** Workflow Streams' own query: the offset the next event will have. */
export const streamOffsetQuery = defineQuery<number>('__temporal_workflow_stream_offset');
