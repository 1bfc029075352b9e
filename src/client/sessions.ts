/**
 * Sessions from a client: `send` is Update-with-Start (the first message starts the session, later
 * ones join it, and the reply is the update's result), `end` and `diagnostics` talk to a running one.
 */
import type { Budget } from '../protocol/budget';
import path from 'node:path';
import { runLimitReached } from './limit-errors';
import { runLimitsFromEnv } from './run-limits-env';
import { WithStartWorkflowOperation, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { StreamEventAt } from '../streaming/events';
import { streamOffsetQuery } from '../protocol/stream';
import { EventPrinter } from './event-printer';
import { CUSTOM_TOOL, TOOL_NAMES, isToolName } from '../plan-format/tools';
import type { ApprovalPolicy, Approvals } from '../plan-format/types';
import { taskQueue as defaultTaskQueue } from '../protocol/task-queue';
import { type SendResult, type SessionDiagnostics, type SessionInput, endSessionSignal, sendUpdate, sessionDiagnosticsQuery } from '../protocol/session';
import type { CadreClient } from './client';
import { CadreError, UsageError } from '../errors/cadre-error';
import { checkWorkflowId } from './workflow-ids';
import { retryUnprocessed } from './unprocessed-updates';

export interface SessionOptions {
  model?: string;
  system?: string;
  tools?: string[];
  /** Tools whose calls wait for a person's approval. */
  ask?: string[];
  workspace?: string;
  keep?: number;
  continueEvery?: number;
  taskQueue?: string;
  /** Caps on what the whole session spends (docs/budgets.md). */
  budget?: Budget;
}

/** How a session starts, checked here: a bad tool name is the user's to fix before anything starts. */
export function sessionInput(options: SessionOptions): SessionInput {
  const tools = options.tools ?? [];
  for (const tool of [...tools, ...(options.ask ?? [])]) {
    if (!isToolName(tool) && !CUSTOM_TOOL.test(tool)) throw new UsageError(`unknown tool "${tool}" (known tools: ${TOOL_NAMES.join(', ')}, ts:<name>, mcp:<server>/<tool>)`);
  }
  const missing = (options.ask ?? []).filter((tool) => !tools.includes(tool));
  if (missing.length > 0) throw new UsageError(`--ask names tools the session does not have: ${missing.join(', ')} (add them to --tools)`);
  const approvals: Approvals = Object.fromEntries((options.ask ?? []).map((tool) => [tool, 'ask' as ApprovalPolicy]));
  const model = options.model ?? (process.env.CADRE_MODEL?.trim() || undefined);
  const limits = runLimitsFromEnv();
  return {
    ...(model && { model: model.startsWith('scripted:') ? `scripted:${path.resolve(model.slice('scripted:'.length))}` : model }),
    ...(options.system && { system: options.system }),
    tools,
    approvals,
    workspace: path.resolve(options.workspace ?? '.'),
    ...(options.keep !== undefined && { keep: options.keep }),
    ...(options.continueEvery !== undefined && { continueEvery: options.continueEvery }),
    ...(limits && { limits }),
    ...(options.budget && { budget: options.budget }),
  };
}

/** The id `cadre chat` gives a new session when it is given none: `chat-` and the time to the second (UTC). */
export function chatSessionId(now = new Date()): string {
  return `chat-${now.toISOString().replace(/[-:T]/g, '').slice(0, 14)}`;
}

/** Sends a message, starting the session if it is not running; resolves with the reply. */
export async function sendMessage(cadre: CadreClient, sessionId: string, text: string, start: SessionInput, options: { taskQueue?: string } = {}): Promise<SendResult> {
  checkWorkflowId(sessionId);
  // An operation runs once: each attempt has its own, with the same start.
  const startWorkflowOperation = () =>
    new WithStartWorkflowOperation('session', {
      workflowId: sessionId,
      taskQueue: options.taskQueue ?? defaultTaskQueue(),
      args: [start],
      workflowIdConflictPolicy: 'USE_EXISTING',
      staticSummary: 'cadre session',
    });
  try {
    // A message no worker processed was not received: it is sent again.
    return await retryUnprocessed(() => cadre.client.workflow.executeUpdateWithStart(sendUpdate, { args: [{ text }], startWorkflowOperation: startWorkflowOperation() }));
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) throw new CadreError(`${sessionId}: ${err.cause?.message ?? err.message}`);
    throw err;
  }
}

/**
 * Sends a message as `sendMessage` does, and hands `onEvent` the session's stream while the reply
 * is written (its text, tool calls and results), up to the reply's last event. The stream is read
 * from where it stood when the message went, so another sender's reply at the same moment may
 * show too. The result is the same as `sendMessage`'s.
 */
export async function sendStreaming(cadre: CadreClient, sessionId: string, text: string, start: SessionInput, onEvent: (event: StreamEventAt) => void, options: { taskQueue?: string } = {}): Promise<SendResult> {
  checkWorkflowId(sessionId);
  const from = await streamOffset(cadre, sessionId);
  const stop = new AbortController();
  let end: number | undefined;
  let seen = from;
  const reading = (async () => {
    for await (const event of cadre.events(sessionId, { from, awaitStart: true, signal: stop.signal, until: (e) => end !== undefined && e.offset + 1 >= end })) {
      seen = event.offset + 1;
      onEvent(event);
    }
  })().catch(() => undefined); // the stream only shows the reply; the update's result is the reply
  try {
    const result = await sendMessage(cadre, sessionId, text, start, options);
    end = result.offset;
    if (end !== undefined && seen < end) await Promise.race([reading, new Promise((resolve) => setTimeout(resolve, STREAM_CATCH_UP_MS))]);
    return result;
  } finally {
    stop.abort();
    await reading;
  }
}

/** Sends a message and prints its reply to stdout as it is written (tool calls as one-line summaries); the whole reply when nothing streamed. */
export async function printReply(cadre: CadreClient, sessionId: string, text: string, start: SessionInput, write: (text: string) => void = (t) => void process.stdout.write(t)): Promise<SendResult> {
  const printer = new EventPrinter({ write });
  let streamed = false;
  let shed = false;
  const result = await sendStreaming(cadre, sessionId, text, start, (event) => {
    streamed ||= event.type === 'text_delta';
    shed ||= event.type === 'stream_shed';
    printer.print(event);
  });
  printer.endLine();
  // Nothing streamed, or the stream stopped showing text (the session neared its limits): the reply whole.
  if (!streamed || shed) write(`${result.reply}\n`);
  return result;
}

/** How long a reply waits for its streamed events to be read once the reply is in. */
const STREAM_CATCH_UP_MS = 5000;

/** The session's stream offset now: 0 for a session not started yet (or ended: the message starts a new one). */
export async function streamOffset(cadre: CadreClient, sessionId: string): Promise<number> {
  const handle = cadre.client.workflow.getHandle(sessionId);
  try {
    if ((await handle.describe()).status.name !== 'RUNNING') return 0;
    return await handle.query(streamOffsetQuery);
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return 0;
    throw err;
  }
}

export async function endSession(cadre: CadreClient, sessionId: string): Promise<void> {
  checkWorkflowId(sessionId);
  await cadre.client.workflow
    .getHandle(sessionId)
    .signal(endSessionSignal)
    .catch((err: unknown) => {
      throw runLimitReached(err, sessionId) ?? err;
    });
}

export async function sessionDiagnostics(cadre: CadreClient, sessionId: string): Promise<SessionDiagnostics> {
  checkWorkflowId(sessionId);
  return cadre.client.workflow.getHandle(sessionId).query(sessionDiagnosticsQuery);
}
