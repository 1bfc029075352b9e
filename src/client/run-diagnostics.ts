/**
 * Reading a run's diagnostics: the workflow's own record while it runs (with its agents' progress
 * and retried tools), its recorded end, or what Temporal knows of a run it closed; and why no
 * worker answers, when none does.
 */
import { status as grpcStatus } from '@grpc/grpc-js';
import { type Client, type Connection, WorkflowFailedError, WorkflowNotFoundError, type WorkflowExecutionDescription, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { hasDeferred } from '../plan-format/refs';
import { materialize, storesIn } from '../store/values';
import { agentDiagnosticsQuery, diagnosticsQuery, type AgentDiagnostics, type AgentSummary, type Diagnostics, type RunStatus } from '../protocol/definitions';
import { CadreError } from '../errors/cadre-error';
import type { ServerInfo } from './connection-config';
import { howItEnded, markEnded, minimalRecord } from './ended-runs';

/** What reading a run takes of a CadreClient. */
export interface RunAccess {
  readonly client: Client;
  readonly connection: Connection;
  readonly server: ServerInfo;
}

/** Worker states after which a worker runs no tools. */
const FINAL_WORKER_STATES = new Set(['completed', 'error', 'cancelled']);

/** How long a diagnostics query may wait for a worker before we tell the user none is running. */
const QUERY_TIMEOUT_MS = 10_000;

export async function liveDiagnostics(cadre: RunAccess, description: WorkflowExecutionDescription): Promise<Diagnostics> {
  const handle = cadre.client.workflow.getHandle(description.workflowId);
  try {
    const diagnostics = await bounded(cadre, QUERY_TIMEOUT_MS, () => handle.query(diagnosticsQuery));
    await withAgentProgress(cadre, diagnostics);
    return withRetries(withClientClock(diagnostics), description.raw.pendingActivities ?? []);
  } catch (err) {
    if (!isFailingWorkflowTask(err) && !(err instanceof TimedOut)) throw err;
    // While a failing task's next attempt runs, the server holds the query instead of refusing it.
    const now = isFailingWorkflowTask(err) ? description : await describeRun(cadre, description.workflowId);
    if (isFailingWorkflowTask(err) || (now.raw.pendingWorkflowTask?.attempt ?? 1) > 1) {
      // Only a task the workflow failed makes a stuck run; tasks that timed out or that the server
      // closed are a loaded or stopped worker, said below.
      const stuck = await stuckRun(cadre, now);
      if (stuck) throw new CadreError(stuck);
    }
    const when = isFailingWorkflowTask(err) ? 'in time (its workflow tasks time out)' : `within ${QUERY_TIMEOUT_MS / 1000}s`;
    throw new NoWorkerAnswered(
      `run ${description.workflowId} is running, but no worker answered ${when}: ` +
        `start one with \`cadre worker\` or \`cadre dev\`, or give a loaded one time (task queue "${description.taskQueue}")`,
    );
  }
}

/**
 * Running agent steps get their agent's turns, tool calls and running tools, and the team's
 * working workers their running tools and, when newer than the team's board, their state (the
 * plan learns the rest when the agent ends; a worker's moves reach the board in batches).
 */
async function withAgentProgress(cadre: RunAccess, d: Diagnostics): Promise<void> {
  const live = d.steps.filter((s) => s.agent && (s.status === 'running' || s.status === 'waiting'));
  const working = (d.workers ?? []).filter((w) => !FINAL_WORKER_STATES.has(w.state));
  const ids = new Set([...live.map((s) => (s.agent as AgentSummary).workflowId), ...working.map((w) => w.workflowId)]);
  const found = new Map<string, AgentDiagnostics>();
  await Promise.all(
    [...ids].map(async (id) => {
      try {
        found.set(id, await bounded(cadre, QUERY_TIMEOUT_MS, () => cadre.client.workflow.getHandle(id).query(agentDiagnosticsQuery)));
      } catch {
        // not started yet, or just ended: the plan's own record stands
      }
    }),
  );
  for (const step of live) {
    const agent = step.agent as AgentSummary;
    const a = found.get(agent.workflowId);
    if (a) step.agent = { ...agent, turns: a.turns, toolCalls: a.toolCalls, usage: a.usage, running: a.running };
  }
  for (const worker of working) {
    const a = found.get(worker.workflowId);
    if (!a) continue;
    worker.running = a.running;
    // Its own query is newer than what its team run last heard: moves go to the team in batches.
    if (a.moves > worker.seq) {
      const last = a.transitions.at(-1);
      Object.assign(worker, { state: a.state, seq: a.moves, fingerprint: a.fingerprint, ...(last && { since: last.at, reason: last.reason }) });
    }
  }
}

/**
 * Why a run cannot answer when its workflow task keeps failing (a worker with other or broken
 * workflow code); undefined when the last retried task timed out or the server closed it as
 * housekeeping: a loaded or stopped worker, not a stuck run.
 */
async function stuckRun(cadre: RunAccess, description: WorkflowExecutionDescription): Promise<string | undefined> {
  const id = description.workflowId;
  const attempt = description.raw.pendingWorkflowTask?.attempt ?? 1;
  const events = (await cadre.client.workflow.getHandle(id).fetchHistory()).events ?? [];
  const last = events.filter((e) => e.workflowTaskFailedEventAttributes || e.workflowTaskTimedOutEventAttributes).pop();
  const attributes = last?.workflowTaskFailedEventAttributes;
  if (!attributes || SERVER_TASK_CLOSES.has(attributes.cause ?? 0)) return undefined;
  const failed = attributes?.failure?.message;
  const why = failed ? `: ${failed.split('\n')[0]}` : '';
  return (
    `run ${id} cannot answer: its workflow task has failed ${attempt} time${attempt === 1 ? '' : 's'}${why}. ` +
    `A worker runs workflow code that cannot go on with this run (another version?); fix the worker, or end the run with \`cadre cancel ${id}\``
  );
}

/**
 * A closed run the workflow could not record the end of (terminated, timed out) or that left no
 * record in its result (cancelled): its last record, replayed by a worker, else what Temporal knows.
 */
export async function endedDiagnostics(cadre: RunAccess, description: WorkflowExecutionDescription, status: RunStatus): Promise<Diagnostics> {
  const ending = await howItEnded(cadre.connection.workflowService, cadre.server.namespace, description, status);
  try {
    const handle = cadre.client.workflow.getHandle(description.workflowId);
    const record = await bounded(cadre, QUERY_TIMEOUT_MS, () => handle.query(diagnosticsQuery));
    return markEnded(record, description, status, ending);
  } catch {
    const missing = `step records need a running cadre worker (task queue "${description.taskQueue}") to replay the history`;
    return minimalRecord(description, status, ending ? `${ending}; ${missing}` : missing);
  }
}

/** A run as Temporal describes it; an unknown id is the user's to fix. */
export async function describeRun(cadre: RunAccess, workflowId: string) {
  try {
    return await cadre.client.workflow.getHandle(workflowId).describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) throw new CadreError(`no run with id "${workflowId}"`);
    throw err;
  }
}

/** Runs a call that needs a worker, cancelling it (not just abandoning it) after `ms`. */
export async function bounded<T>(cadre: RunAccess, ms: number, call: () => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), ms);
  try {
    return await cadre.client.withAbortSignal(controller.signal, call);
  } catch (err) {
    if (controller.signal.aborted) throw new TimedOut();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/** The run's output with stored values read; if they cannot be read here, the references stay and a note says why. */
export async function readStoredOutput(diagnostics: Diagnostics): Promise<Diagnostics> {
  if (!hasDeferred(diagnostics.output)) return diagnostics;
  try {
    return { ...diagnostics, output: await materialize(diagnostics.output, { stores: storesIn(diagnostics.output) }) };
  } catch (err) {
    const note = `the output keeps references to values stored on the workers: ${(err as Error).message}`;
    return { ...diagnostics, note: diagnostics.note ? `${diagnostics.note}; ${note}` : note };
  }
}

/** The final diagnostics a run cadre ended keeps in its result (completed) or failure details (failed). */
export async function recordedEnd(handle: WorkflowHandle): Promise<Diagnostics | undefined> {
  try {
    return (await handle.result()) as Diagnostics;
  } catch (err) {
    const details = err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure ? err.cause.details?.[0] : undefined;
    return details && typeof details === 'object' && 'steps' in details ? (details as Diagnostics) : undefined;
  }
}

/** An open run's elapsed time, from the client's clock: the workflow's moves only when it wakes. */
function withClientClock(diagnostics: Diagnostics): Diagnostics {
  if (diagnostics.endedAt) return diagnostics;
  return { ...diagnostics, elapsedMs: Math.max(diagnostics.elapsedMs, Date.now() - Date.parse(diagnostics.startedAt)) };
}

export class TimedOut extends Error {}

/** A run's query that no worker answered in time: none runs, or the one that had the run just died. */
export class NoWorkerAnswered extends CadreError {}

/** The server refuses queries of a run whose workflow task is failing (FAILED_PRECONDITION). */
const TaskFailedCause = temporal.api.enums.v1.WorkflowTaskFailedCause;
/**
 * Workflow tasks the server itself closes as housekeeping, which the run survives: more events
 * arrived than it buffers during one task (a loaded worker), a sticky worker went away, new events
 * raced the task's commands.
 */
export const SERVER_TASK_CLOSES = new Set<number>([
  TaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_FORCE_CLOSE_COMMAND,
  TaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_RESET_STICKY_TASK_QUEUE,
  TaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
]);

function isFailingWorkflowTask(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = (e as { cause?: unknown }).cause) {
    if ((e as { code?: unknown }).code === grpcStatus.FAILED_PRECONDITION) return true;
  }
  return false;
}

type PendingActivity = NonNullable<WorkflowExecutionDescription['raw']['pendingActivities']>[number];

/** Marks running steps whose tool is being retried, from activity ids named after steps (`enrich[2]#2`). */
function withRetries(diagnostics: Diagnostics, pending: PendingActivity[]): Diagnostics {
  for (const activity of pending) {
    const attempt = activity.attempt ?? 1;
    const stepId = (activity.activityId ?? '').split(/[[#]/)[0];
    const step = diagnostics.steps.find((s) => s.id === stepId && s.status === 'running');
    if (!step || attempt < 2 || (step.retrying && step.retrying.attempt >= attempt)) continue;
    step.retrying = { attempt, ...(activity.lastFailure?.message && { lastFailure: activity.lastFailure.message }) };
  }
  return diagnostics;
}
