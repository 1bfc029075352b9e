/**
 * What makes an agent a team worker: the `signal_state` tool, and the rule that a worker is done
 * only when it says so. A turn that ends without a tool call is answered with a reminder; after
 * `silentTurns` reminders the worker is `blocked` and waits for a person, never taken for done.
 */
import { ApplicationFailure, sleep } from '@temporalio/workflow';
import { durationMs, isDuration } from '../spec/duration';
import type { WorkflowTool } from './agent-loop';
import type { WorkerReporter } from './worker-reporter';

/** States an agent may say it is in; the others follow from what it does (asking, spawning, answering). */
const SIGNALLED_STATES = ['completing', 'blocked', 'error'] as const;
const MAX_REASON_CHARS = 10_000;
/** A blocked worker that checks again on its own waits at most this long in one go. */
const MAX_RETRY_AFTER_MS = 24 * 3600_000;

export interface TeamSettings {
  /** Reminders to a worker that ends a turn without a tool call before it is marked blocked. */
  silentTurns: number;
}

export interface TeamWorkerContext {
  reporter: WorkerReporter;
  /** Asks a person (a wait on the worker's own run) and resolves with the answer. */
  askPerson(id: string, prompt: string): Promise<string>;
  label: string;
}

export const SIGNAL_STATE_SCHEMA: Record<string, unknown> = {
  type: 'object',
  properties: {
    state: { type: 'string', enum: [...SIGNALLED_STATES], description: 'completing: you are done (give result); blocked: you cannot go on now; error: the task cannot be done' },
    reason: { type: 'string', description: 'Why, in a sentence or two.' },
    result: { description: 'With completing: your final answer, as text or JSON.' },
    retryAfter: { type: 'string', description: 'With blocked: check again after this long (e.g. 30s, 5m) instead of waiting for a person.' },
  },
  required: ['state', 'reason'],
  additionalProperties: false,
};

export function signalStateTool(ctx: TeamWorkerContext): WorkflowTool {
  return {
    name: 'signal_state',
    description: 'Tell the team your state. You must call it to finish (completing, with your result), or when you cannot go on (blocked) or the task cannot be done (error).',
    inputSchema: SIGNAL_STATE_SCHEMA,
    call: async (args, callId) => {
      const problem = checkArgs(args);
      if (problem) return { result: problem, isError: true };
      const { state, reason } = args as { state: (typeof SIGNALLED_STATES)[number]; reason: string };
      if (state === 'completing') {
        const moved = ctx.reporter.tryMove('completing', reason);
        if (typeof moved === 'string') return { result: moved, isError: true };
        return { result: 'completing', final: { output: args.result } };
      }
      if (state === 'error') {
        const moved = ctx.reporter.tryMove('error', reason);
        if (typeof moved === 'string') return { result: moved, isError: true };
        throw ApplicationFailure.nonRetryable(`${ctx.label}: the worker gave up: ${reason}`, 'WorkerGaveUp');
      }
      const moved = ctx.reporter.tryMove('blocked', reason);
      if (typeof moved === 'string') return { result: moved, isError: true };
      const retryAfter = args.retryAfter as string | undefined;
      if (retryAfter !== undefined) {
        await sleep(durationMs(retryAfter));
        ctx.reporter.move('running', `checking again after ${retryAfter}`);
        return { result: `${retryAfter} passed: check again whether you can go on` };
      }
      const answer = await ctx.askPerson(`${ctx.label}/blocked-${callId}`, `${ctx.label} is blocked: ${reason}. What should it do?`);
      return { result: `A person answered: ${answer}` };
    },
  };
}

/** The reminder for a turn without a tool call; past the limit, a person is asked what the worker should do. */
export function silentTurnHandler(ctx: TeamWorkerContext, settings: TeamSettings): (count: number) => Promise<string> {
  return async (count) => {
    if (count <= settings.silentTurns) {
      return (
        `You ended your turn without calling a tool (reminder ${count} of ${settings.silentTurns}). ` +
        'A team worker must say its state: call signal_state with state completing and your result when you are done, ' +
        'blocked with the reason when you cannot go on, or error when the task cannot be done.'
      );
    }
    ctx.reporter.move('blocked', `ended ${count} turns in a row without a tool call or a state signal`);
    const answer = await ctx.askPerson(`${ctx.label}/silent-${count}`, `${ctx.label} stopped without saying its state (${count} turns). What should it do?`);
    return `A person answered: ${answer}`;
  };
}

function checkArgs(args: Record<string, unknown>): string | undefined {
  const { state, reason, retryAfter } = args;
  if (!(SIGNALLED_STATES as readonly unknown[]).includes(state)) return `state must be one of ${SIGNALLED_STATES.join(', ')}`;
  if (typeof reason !== 'string' || reason.trim() === '') return 'reason must be a non-empty string';
  if (reason.length > MAX_REASON_CHARS) return `reason has ${reason.length} characters; at most ${MAX_REASON_CHARS}`;
  if (state === 'completing' && args.result === undefined) return 'completing needs your result';
  if (retryAfter !== undefined) {
    if (state !== 'blocked') return 'only blocked takes retryAfter';
    if (typeof retryAfter !== 'string' || !isDuration(retryAfter)) return 'retryAfter must be a duration such as 30s or 5m';
    const ms = durationMs(retryAfter);
    if (ms <= 0 || ms > MAX_RETRY_AFTER_MS) return 'retryAfter must be more than 0 and at most 24h';
  }
  return undefined;
}
