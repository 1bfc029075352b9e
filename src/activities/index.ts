/**
 * Activities: every piece of I/O cadre does. Workflows import only the *type*
 * of `createActivities`; the worker registers the real functions.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { runTool } from './tools/run-tool';

export interface ToolRequest {
  tool: string;
  params: unknown;
  workspace: string;
  stepId: string;
}

export interface ToolResult {
  output: unknown;
  /** The attempt that succeeded, so the workflow can record attempts. */
  attempt: number;
}

/** Details attached to every failure of `runTool`. */
export interface ToolFailureDetails {
  attempt: number;
  output?: unknown;
}

const HEARTBEAT_EVERY_MS = 1000;

// Dependencies are injected here as cadre grows (model clients, git, audit sinks).
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export type ActivityDeps = {};

export function createActivities(_deps: ActivityDeps = {}) {
  return {
    async runTool(request: ToolRequest): Promise<ToolResult> {
      const ctx = Context.current();
      const attempt = ctx.info.attempt;
      // Heartbeats let the server notice a dead worker within the heartbeat timeout
      // and deliver cancellation; the SDK throttles them. Local activities cannot heartbeat
      // (they are cancelled through their workflow task instead).
      const beat = ctx.info.isLocal ? undefined : setInterval(() => ctx.heartbeat(), HEARTBEAT_EVERY_MS);
      try {
        const output = await runTool(request.tool, request.params, {
          workspace: request.workspace,
          stepId: request.stepId,
          attempt,
          signal: ctx.cancellationSignal,
        });
        return { output, attempt };
      } catch (err) {
        throw withAttempt(err, attempt);
      } finally {
        clearInterval(beat);
      }
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;

function withAttempt(err: unknown, attempt: number): unknown {
  if (err instanceof ApplicationFailure) {
    const details: ToolFailureDetails = { attempt, output: err.details?.[0] };
    return ApplicationFailure.create({ type: err.type ?? 'Error', message: err.message, nonRetryable: err.nonRetryable ?? false, details: [details] });
  }
  if (err instanceof Error && err.name !== 'AbortError' && !(err as { name?: string }).name?.includes('Cancel')) {
    const details: ToolFailureDetails = { attempt };
    return ApplicationFailure.create({ type: err.name || 'Error', message: err.message, details: [details] });
  }
  return err;
}
