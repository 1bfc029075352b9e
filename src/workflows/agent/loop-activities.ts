/**
 * The agent loop's activities (model turns, the toolset, tool calls) with their timeouts and
 * retries, and the shapes of what goes back to the model: pieces of agent-loop.ts.
 */
import type { Duration } from '@temporalio/common';
import { ApplicationFailure } from '@temporalio/workflow';
import type { ModelToolCall } from '../../activities';
import { BLOB_THRESHOLD_BYTES } from '../../plan-format/limits';
import { describeFailure } from '../common/failures';
import { type HostRoute, hostActivities } from '../common/host-route';
import type { ToolMessage } from './loop-contract';

/** Tool results are sent back to the model; this keeps a runaway one from filling history. */
const MAX_RESULT_CHARS = 64 * 1024;

/** Tool output bytes an agent keeps in its history: bigger parts are stored and passed by reference. */
export const AGENT_INLINE_LIMIT = Math.min(8 * 1024, BLOB_THRESHOLD_BYTES);

export function modelActivities(maximumAttempts = 8, route?: HostRoute) {
  return hostActivities({
    startToCloseTimeout: '5m',
    // The activity beats every second while it waits on the provider: a dead worker's turn moves on in 10 s.
    heartbeatTimeout: '10s',
    summary: 'model turn',
    retry: {
      initialInterval: '1s',
      backoffCoefficient: 2,
      maximumInterval: '1m',
      maximumAttempts,
      // Fixing these takes a person (a key, a model name, a shorter prompt); retrying only repeats the bill.
      nonRetryableErrorTypes: [
        'ModelConfigInvalid',
        'BadModelRequest',
        'ModelAuthFailed',
        'ModelNotFound',
        'ModelContextTooLong',
        'ModelRequestRejected',
        'StructuredOutputInvalid',
        'ScriptMismatch',
      ],
    },
  }, route);
}

const TOOLSET_OPTIONS = { startToCloseTimeout: '1m', heartbeatTimeout: '10s', retry: { maximumAttempts: 3 }, summary: 'agent tools' } as const;

/** The activity that lists an agent's tools (it warms the code tools for the workspace: on its host in a fleet). */
export function toolset(route?: HostRoute) {
  return hostActivities(TOOLSET_OPTIONS, route);
}

/**
 * One tool call's activity, its id naming the step and the call; `timeout`: a step's verify's own.
 * A command's non-zero exit is the model's (or the check's) to read, never retried: running it
 * again would repeat what it did (`echo x >> log; false` wrote three lines). A worker that dies
 * under a call is retried.
 */
export function toolActivities(label: string, tool: string, callId: string, heartbeatTimeout: Duration = '10s', route?: HostRoute, timeout: Duration = '10m') {
  return hostActivities({
    activityId: `${label}/${callId}`,
    summary: `${label}: ${tool}`,
    scheduleToCloseTimeout: timeout,
    heartbeatTimeout,
    retry: { maximumAttempts: 3, initialInterval: '1s', nonRetryableErrorTypes: [SHELL_EXIT] },
  }, route);
}

/** The shell tool's failure for a command that ran and exited non-zero. */
export const SHELL_EXIT = 'ShellExit';

/** The ApplicationFailure in an error's causes (an activity's, a child's), or one made from the error. */
export function asFailure(err: unknown): ApplicationFailure {
  for (let cursor: unknown = err, depth = 0; cursor instanceof Error && depth < 10; depth++) {
    if (cursor instanceof ApplicationFailure) return cursor;
    cursor = (cursor as { cause?: unknown }).cause;
  }
  return ApplicationFailure.create({ type: 'AgentFailed', message: describeFailure(err).message, nonRetryable: false });
}

/** What the model reads back for a tool call: its result (clipped), marked when it is an error. */
export function toolReply(call: ModelToolCall, result: unknown, isError?: boolean): ToolMessage {
  return { role: 'tool', toolCallId: call.id, toolName: call.name, result: clipResult(result), ...(isError && { isError: true }) };
}

function clipResult(result: unknown): unknown {
  const text = typeof result === 'string' ? result : JSON.stringify(result);
  if (text === undefined || text.length <= MAX_RESULT_CHARS) return result ?? null;
  return `${text.slice(0, MAX_RESULT_CHARS)}… (${text.length - MAX_RESULT_CHARS} more characters not shown; read the rest in parts, e.g. with shell and head/tail)`;
}

export function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text;
}
