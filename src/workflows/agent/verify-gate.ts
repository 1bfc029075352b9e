/**
 * An agent step's `verify` (protocol/verify.ts) in the agent loop: before a final answer is taken,
 * the plan's command runs once (a `shell` call of the plan's, in the step's sandbox and workspace;
 * its exit is the answer, never retried, while a worker that dies under it is). Passing, the answer stands; failing, the model is
 * told why and goes on, until the failures sent back are used up and the step fails.
 */
import { type Duration, TimeoutType } from '@temporalio/common';
import { ApplicationFailure, TimeoutFailure, isCancellation } from '@temporalio/workflow';
import { type Verify, type VerifyRun, verifyCorrection, verifyFailedMessage } from '../../protocol/verify';
import type { AuditEvent } from './audit';
import type { LoopSpec } from './loop-contract';
import { AGENT_INLINE_LIMIT, SHELL_EXIT, asFailure, toolActivities } from './loop-activities';
import { nowMs } from '../common/clock';

export class VerifyGate {
  private runs = 0;
  private failures = 0;

  constructor(
    private readonly spec: LoopSpec & { verify: Verify },
    private readonly loop: {
      record(event: Omit<AuditEvent, 'at' | 'step'>): void;
      /** The loop's tools running now, which `cadre status` lists: the check is one while it runs. */
      running: Map<string, string>;
      progressed(): void;
    },
  ) {}

  /** Undefined when the check passes; else what to tell the model. Throws once the failures sent back are used up, or when the command cannot run at all. */
  async unmet(): Promise<string | undefined> {
    const { spec } = this;
    const callId = `verify.${++this.runs}`;
    const started = nowMs();
    this.loop.record({ event: 'tool.started', call: callId, tool: 'verify' });
    this.loop.running.set(callId, 'verify');
    this.loop.progressed();
    try {
      await toolActivities(spec.label, 'verify', callId, spec.toolHeartbeatTimeout, spec.route, spec.verify.timeout as Duration).runTool({
        tool: 'shell',
        params: { command: spec.verify.command },
        workspace: spec.workspace,
        stepId: spec.label,
        ...(spec.worktree && { worktree: true }),
        inlineLimit: AGENT_INLINE_LIMIT,
        ...(spec.storeWorkspace && { storeWorkspace: spec.storeWorkspace }),
        ...(spec.sandbox && { sandbox: spec.sandbox }),
      });
      this.loop.record({ event: 'tool.finished', call: callId, tool: 'verify', durationMs: nowMs() - started, outcome: 'ok' });
      return undefined;
    } catch (err) {
      if (isCancellation(err)) throw err;
      // Out of time is the check's failure; a worker that died on its every attempt (heartbeats) is not.
      const timedOut = err instanceof Error && err.cause instanceof TimeoutFailure && err.cause.timeoutType === TimeoutType.SCHEDULE_TO_CLOSE;
      const failure = asFailure(err);
      this.loop.record({ event: 'tool.finished', call: callId, tool: 'verify', durationMs: nowMs() - started, outcome: timedOut ? 'timed_out' : 'error', errorType: timedOut ? 'VerifyTimedOut' : (failure.type ?? 'Error') });
      // A command that never ran (no sandbox, a bad directory) is not the agent's to fix; one that hangs may be.
      if (!timedOut && failure.type !== SHELL_EXIT) throw err;
      const run = timedOut ? { message: `it did not end within ${spec.verify.timeout} (verify.timeout)` } : ranAndFailed(failure);
      if (++this.failures > spec.verify.attempts) throw ApplicationFailure.nonRetryable(verifyFailedMessage(spec.verify, run), 'AgentVerifyFailed');
      return verifyCorrection(spec.verify, run, this.failures);
    } finally {
      this.loop.running.delete(callId);
      this.loop.progressed();
    }
  }
}

/** The shell's output from the failure's details (runTool attaches `{ attempt, output }`); a stream stored outside history is left out. */
function ranAndFailed(failure: ApplicationFailure): VerifyRun {
  const details = failure.details?.[0] as { output?: { exitCode?: unknown; stdout?: unknown; stderr?: unknown } } | undefined;
  const output = details?.output;
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined);
  return {
    message: failure.message,
    ...(typeof output?.exitCode === 'number' && { exitCode: output.exitCode }),
    ...(text(output?.stdout) !== undefined && { stdout: text(output?.stdout) }),
    ...(text(output?.stderr) !== undefined && { stderr: text(output?.stderr) }),
  };
}
