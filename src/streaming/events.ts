/**
 * The events of a run's stream (docs/streaming.md), defined once: workflows publish them by type,
 * activities by type, and readers check what they read against this schema. Every event names
 * its step, and a model's events also its turn and attempt; the reader adds the offset.
 */
import { z } from 'zod';

export { STREAM_TOPIC, TOOL_RESULT_PREVIEW_CHARS } from '../protocol/stream';

const base = {
  /** The step (`review`, `review[2]`), or `session`; absent for the run's own events. */
  step: z.string().optional(),
  /** The agent's model turn, from 1. */
  turn: z.int().positive().optional(),
  /** The attempt of that turn's activity, from 1: a retried turn starts again with `message_start`. */
  attempt: z.int().positive().optional(),
  /** Milliseconds since the epoch when it was published (the workflow's clock for its own events). */
  at: z.number(),
};

const usage = z.strictObject({ inputTokens: z.number(), outputTokens: z.number(), cachedInputTokens: z.number().optional() });
const waitEvent = { ...base, waitId: z.string(), prompt: z.string(), choices: z.array(z.string()).optional(), workflowId: z.string().optional() };

export const streamEventSchema = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('message_start'), ...base, model: z.string().optional() }),
  z.strictObject({ type: z.literal('text_delta'), ...base, text: z.string() }),
  z.strictObject({ type: z.literal('tool_call'), ...base, callId: z.string(), tool: z.string(), args: z.record(z.string(), z.unknown()) }),
  z.strictObject({
    type: z.literal('tool_result'),
    ...base,
    callId: z.string(),
    tool: z.string(),
    isError: z.boolean().optional(),
    /** The result as JSON text, at most `TOOL_RESULT_PREVIEW_CHARS`; secrets redacted. */
    preview: z.string(),
    /** The whole result's length in characters, when the preview is shorter. */
    truncatedFrom: z.int().optional(),
  }),
  z.strictObject({
    type: z.literal('message_complete'),
    ...base,
    finishReason: z.string(),
    usage,
    toolCalls: z.int().nonnegative(),
    /** Set when the answer's text was longer than the stream shows (256 K characters a turn): its whole length, and what was streamed. */
    textChars: z.int().optional(),
    streamedChars: z.int().optional(),
    /** Set when tool results were shortened so the turn fit the model's context: how many, and the tokens taken out (estimated). */
    shortened: z.strictObject({ toolResults: z.int().nonnegative(), tokens: z.int().nonnegative() }).optional(),
  }),
  z.strictObject({ type: z.literal('step_started'), ...base, step: z.string(), kind: z.string() }),
  z.strictObject({ type: z.literal('step_completed'), ...base, step: z.string(), status: z.enum(['completed', 'skipped', 'cancelled']), note: z.string().optional() }),
  z.strictObject({ type: z.literal('step_failed'), ...base, step: z.string(), error: z.string() }),
  z.strictObject({ type: z.literal('approval_requested'), ...waitEvent }),
  z.strictObject({ type: z.literal('question_asked'), ...waitEvent }),
  /** The host that holds the workspace stopped polling: its activities wait for it, or for `cadre move` (docs/operations.md, A fleet). */
  z.strictObject({ type: z.literal('host_unreachable'), ...waitEvent }),
  z.strictObject({ type: z.literal('error'), ...base, errorType: z.string(), message: z.string(), retryable: z.boolean() }),
  z.strictObject({ type: z.literal('run_completed'), ...base, status: z.string(), error: z.string().optional() }),
  /** An agent started: its turns stream on its own workflow, `workflowId` (readers follow it from here). */
  z.strictObject({ type: z.literal('agent_started'), ...base, step: z.string(), workflowId: z.string(), kind: z.enum(['agent', 'decide']).optional() }),
  /** The last event of an agent's own stream. */
  z.strictObject({ type: z.literal('agent_ended'), ...base, step: z.string(), status: z.enum(['completed', 'failed', 'cancelled']) }),
  /** This stream shows no more text from here on, only what the workflow itself sees (turns' ends, tool calls and results), and why. */
  z.strictObject({ type: z.literal('stream_shed'), ...base, reason: z.string() }),
  /** An agent used its budget's warning share (docs/budgets.md): its next turn is told what is left. */
  z.strictObject({ type: z.literal('budget_warning'), ...base, step: z.string(), message: z.string() }),
  // A plan's budget as its agents ask and settle: what is used so far, against its caps.
  z.strictObject({ type: z.literal('budget_spent'), ...base, used: z.string() }),
  /** The workflow hosting this stream has used 80% of one of Temporal's per-run limits. */
  z.strictObject({ type: z.literal('limits_warning'), ...base, limit: z.enum(['signals', 'updates', 'events', 'bytes']), used: z.number(), max: z.number(), message: z.string() }),
]);

export type StreamEvent = z.infer<typeof streamEventSchema>;
/** An event as a workflow publishes it: its stream adds the time. */
export type OwnEvent = StreamEvent extends infer E ? (E extends StreamEvent ? Omit<E, 'at'> : never) : never;
export type StreamEventType = StreamEvent['type'];
/**
 * An event as a reader sees it: with its place in its stream, and which stream that is when it is
 * not the run's own (an agent's workflow id).
 */
export type StreamEventAt = StreamEvent & { offset: number; stream?: string };
/** Events of one type. */
export type EventOf<T extends StreamEventType> = Extract<StreamEvent, { type: T }>;

export const STREAM_EVENT_TYPES = streamEventSchema.options.map((o) => o.shape.type.value) as StreamEventType[];
