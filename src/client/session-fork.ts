/**
 * A session's fork (docs/forks.md): a new session holding the first N messages of another (the
 * first N a person sent, with the replies to them), as Claude's `fork_session` does. The old
 * session is read by its `sessionForkSource` query and never changed; the new one starts with
 * the same model, tools and workspace, and goes on from there.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import type { ModelMessageInput } from '../providers/model-turn';
import type { SessionState } from '../protocol/session';
import { sessionForkSourceQuery } from '../protocol/forks';
import { CadreForkedFrom } from '../protocol/search-attributes';
import { taskQueue as defaultTaskQueue } from '../protocol/task-queue';
import { CadreError, UsageError } from '../errors/cadre-error';
import type { CadreClient } from './client';
import { checkWorkflowId } from './workflow-ids';

export interface SessionForkOptions {
  /** How many of the session's messages (those a person sent, each with its reply) the fork holds. */
  at: number;
  workflowId?: string;
  taskQueue?: string;
}

export async function forkSession(cadre: CadreClient, session: string, options: SessionForkOptions): Promise<{ workflowId: string }> {
  checkWorkflowId(session);
  if (!Number.isInteger(options.at) || options.at < 1) throw new UsageError(`--at: expected a message number from 1, got ${options.at}`);
  const handle = cadre.client.workflow.getHandle(session);
  const description = await handle.describe().catch((err: unknown) => {
    throw err instanceof WorkflowNotFoundError ? new CadreError(`no session with id "${session}"`) : err;
  });
  if (description.type !== 'session') throw new CadreError(`${session} is a ${description.type} run, not a session: fork a plan run with --from <step>`);
  const source = await handle.query(sessionForkSourceQuery);
  const state = firstMessages(source.state, options.at, session);
  const workflowId = options.workflowId ?? `${session}-fork-${Date.now().toString(36)}`;
  checkWorkflowId(workflowId);
  await cadre.client.workflow.start('session', {
    workflowId,
    taskQueue: options.taskQueue ?? defaultTaskQueue(),
    args: [{ ...source.input, state }],
    memo: { forkedFrom: { run: session, message: options.at } },
    typedSearchAttributes: [{ key: CadreForkedFrom, value: session }],
    staticSummary: `fork of session ${session} at message ${options.at}`,
  });
  return { workflowId };
}

/** The state of a session that has said only its first `at` exchanges. Pure. */
export function firstMessages(state: SessionState, at: number, session = 'the session'): SessionState {
  if (state.summarised > 0 || state.dropped > 0) {
    throw new CadreError(`${session} has folded its earliest messages into a summary (or dropped them): a fork cannot hold its first ${at} whole`);
  }
  const ends = state.exchanges;
  if (ends === undefined) throw new CadreError(`${session} was started by a cadre that did not record where its messages end: it cannot be forked`);
  if (at > ends.length) throw new CadreError(`--at ${at}: ${session} holds ${ends.length} message${ends.length === 1 ? '' : 's'} with their replies`);
  // The first `at` messages a person sent, each with everything that answered it (tool calls, corrections, the reply).
  const messages: ModelMessageInput[] = state.messages.slice(0, ends[at - 1]);
  return { messages, summarised: 0, dropped: 0, answered: at, exchanges: ends.slice(0, at), runs: 0, turns: 0, toolCalls: 0, usage: { inputTokens: 0, outputTokens: 0 } };
}
