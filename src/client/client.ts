/**
 * The typed client API of cadre: start plans, read their diagnostics, answer them,
 * pause, resume and cancel them. The `cadre` CLI is a thin layer over this.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { status as grpcStatus } from '@grpc/grpc-js';
import {
  Client,
  Connection,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type WorkflowExecutionDescription,
  type WorkflowHandle,
} from '@temporalio/client';
import { ApplicationFailure, type DataConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { CompiledPlan, StepAction } from '../spec/types';
import { resolveInputs } from '../spec/inputs';
import { utf8Length } from '../spec/limits';
import { checkStartPayload } from '../spec/payload';
import { formatCount, shorten } from '../spec/text';
import { formatIssues } from '../spec/validate';
import {
  CadrePlan,
  CadreStatus,
  agentDiagnosticsQuery,
  answerUpdate,
  diagnosticsQuery,
  pauseUpdate,
  resumeUpdate,
  type AgentDiagnostics,
  type AgentSummary,
  type Diagnostics,
  type RunStatus,
} from '../workflows/common/definitions';
import { hasDeferred } from '../spec/refs';
import { auditDir, auditFile } from '../store/audit-files';
import { materialize, storesIn } from '../store/values';
import { taskQueue as defaultTaskQueue } from './task-queue';
import { howItEnded, markEnded, minimalRecord } from './ended-runs';
import { CadreError } from '../errors/cadre-error';
import { endedAs, isFinal, isRunStatus, listFilter } from './run-status';
import { workflowIdInterceptor } from './workflow-ids';
import { FRAME_SLACK } from '../workflows/plan/details';
import { cadreDataConverter } from '../codec/data-converter';
import { type ConnectOptions, type ServerInfo, connectionOptions, resolveConnection } from './connection-config';

export { CadreError, UsageError } from '../errors/cadre-error';
export { SERVER_INFO_FILE, readServerInfo, resolveConnection, type ConnectOptions, type ServerInfo } from './connection-config';
export { isFinal } from './run-status';

export interface StartOptions {
  workflowId?: string;
  taskQueue?: string;
}

export interface RunSummary {
  workflowId: string;
  runId: string;
  plan?: string;
  /** A RunStatus; `continued_as_new` (or a newer Temporal status) for an execution that ended another way. */
  status: RunStatus | string;
  startTime: Date;
  closeTime?: Date;
}

/** Worker states after which a worker runs no tools. */
const FINAL_WORKER_STATES = new Set(['completed', 'error', 'cancelled']);

/** How long a diagnostics query may wait for a worker before we tell the user none is running. */
const QUERY_TIMEOUT_MS = 10_000;
/** Likewise for answers, pause and resume (updates are only recorded once a worker accepts them). */
const UPDATE_TIMEOUT_MS = 20_000;

export class CadreClient {
  private constructor(
    readonly client: Client,
    readonly connection: Connection,
    readonly server: ServerInfo,
    /** False for a caller's own Client: its connection is the caller's to close. */
    private readonly ownsConnection = true,
  ) {}

  /** Connects as the CLI does (docs: "Connecting to Temporal"): Temporal's config file and variables, or `options`. */
  static async connect(options: ConnectOptions = {}): Promise<CadreClient> {
    const server = resolveConnection(options);
    let connection: Connection;
    try {
      connection = await Connection.connect({ ...connectionOptions(server), connectTimeout: 5000 });
    } catch (err) {
      throw new CadreError(
        `cannot reach Temporal at ${server.address} (from ${server.source ?? 'the caller'}; ${(err as Error).message.split('\n')[0]}): ` +
          'start one with `cadre dev`, or set TEMPORAL_ADDRESS (or --address, or a profile with --profile)',
      );
    }
    const interceptors = { workflow: [workflowIdInterceptor] };
    let dataConverter: DataConverter | undefined;
    try {
      dataConverter = cadreDataConverter();
    } catch (err) {
      await connection.close();
      throw err;
    }
    return new CadreClient(new Client({ connection, namespace: server.namespace, interceptors, ...(dataConverter && { dataConverter }) }), connection, server);
  }

  /**
   * A CadreClient over a Temporal Client of the caller's own (its connection, namespace, data
   * converter and interceptors); `close()` leaves that connection open.
   */
  static fromClient(client: Client, options: { uiUrl?: string } = {}): CadreClient {
    const connection = client.connection as Connection;
    const server: ServerInfo = { address: connection.options?.address ?? '(the caller\'s connection)', namespace: client.options.namespace, ...(options.uiUrl && { uiUrl: options.uiUrl }), source: 'the caller' };
    return new CadreClient(client, connection, server, false);
  }

  async close(): Promise<void> {
    if (this.ownsConnection) await this.connection.close();
  }

  /** Web UI link of a run, when the server is a dev server cadre started. */
  uiLink(workflowId: string): string | undefined {
    if (!this.server.uiUrl) return undefined;
    return `${this.server.uiUrl}/namespaces/${this.server.namespace}/workflows/${encodeURIComponent(workflowId)}`;
  }

  /** Starts a plan. The default id is derived from the plan and its inputs, so a retried start does not run it twice. */
  async start(plan: CompiledPlan, givenInputs: Record<string, unknown> = {}, options: StartOptions = {}) {
    const inputs = resolveInputs(plan, givenInputs);
    if (!inputs.ok) throw new CadreError(`bad inputs:\n${formatIssues(inputs.issues)}`);
    // Temporal would answer a too-big start with a bare RESOURCE_EXHAUSTED or blob-size error.
    const payload = checkStartPayload(plan, inputs.values, (name) => `input "${name}"`);
    if (payload.problem) throw new CadreError(`cannot start plan "${plan.name}": ${payload.problem.message}`);
    const workflowId = options.workflowId ?? defaultWorkflowId(plan, inputs.values);
    try {
      const handle = await this.client.workflow.start('runPlan', {
        workflowId,
        taskQueue: options.taskQueue ?? defaultTaskQueue(),
        args: [{ plan, inputs: inputs.values }],
        memo: { plan: plan.name },
        typedSearchAttributes: [
          { key: CadrePlan, value: plan.name },
          { key: CadreStatus, value: 'running' },
        ],
        staticSummary: `plan ${plan.name}`,
        staticDetails: planDetails(plan, inputs.values),
      });
      return { workflowId: handle.workflowId, runId: handle.firstExecutionRunId };
    } catch (err) {
      if (/(no mapping|not defined).*search attribute|search attribute.*(no mapping|not defined)/i.test(errorChain(err))) {
        throw new CadreError(
          `namespace "${this.server.namespace}" lacks cadre's search attributes: run \`cadre setup\` or start \`cadre worker\` (both register them), then run again`,
        );
      }
      if (err instanceof WorkflowExecutionAlreadyStartedError) {
        throw new CadreError(`plan "${plan.name}" is already running as ${workflowId} (watch it with \`cadre watch ${workflowId}\`, or pass --id to start another run)`);
      }
      throw err;
    }
  }

  /** Diagnostics of a run, running or ended (by cadre, an operator, the server or a timeout). */
  async diagnostics(workflowId: string): Promise<Diagnostics> {
    const description = await this.describe(workflowId);
    const ended = endedAs(description);
    if (ended === undefined) return this.liveDiagnostics(description);
    if (!isRunStatus(ended)) throw new CadreError(`run ${workflowId} ended as ${ended}, which cadre cannot show`);
    // A run cadre ended carries its diagnostics in its result or failure; no worker needed.
    const recorded = ended === 'completed' || ended === 'failed' ? await recordedEnd(this.client.workflow.getHandle(workflowId)) : undefined;
    return recorded ?? this.endedDiagnostics(description, ended);
  }

  async answer(workflowId: string, waitId: string, value: string): Promise<void> {
    await this.update(workflowId, () => this.client.workflow.getHandle(workflowId).executeUpdate(answerUpdate, { args: [{ waitId, value }] }));
  }

  async pause(workflowId: string): Promise<void> {
    await this.update(workflowId, () => this.client.workflow.getHandle(workflowId).executeUpdate(pauseUpdate));
  }

  async resume(workflowId: string): Promise<void> {
    await this.update(workflowId, () => this.client.workflow.getHandle(workflowId).executeUpdate(resumeUpdate));
  }

  /** Temporal's own cancellation, the same as `temporal workflow cancel`: compensations run, the run ends cancelled. */
  async cancel(workflowId: string, reason?: string): Promise<void> {
    await this.openRun(workflowId);
    try {
      await this.connection.workflowService.requestCancelWorkflowExecution({
        namespace: this.server.namespace,
        workflowExecution: { workflowId },
        identity: 'cadre-cli',
        reason: reason ?? 'cancelled with cadre',
      });
    } catch (err) {
      await this.openRun(workflowId); // it may have ended since we looked
      throw err;
    }
  }

  /**
   * Waits for the run to end and returns its final diagnostics, with outputs that were stored
   * outside history read back from the workers' blob store when this machine can reach it
   * (`readStored: false` keeps the references).
   */
  async result(workflowId: string, options: { readStored?: boolean } = {}): Promise<Diagnostics> {
    await this.describe(workflowId); // unknown ids fail here, not after a wait
    const handle = this.client.workflow.getHandle(workflowId);
    try {
      await handle.result();
    } catch {
      // runs that did not complete still have diagnostics
    }
    const diagnostics = await this.diagnostics(workflowId);
    return options.readStored === false ? diagnostics : readStoredOutput(diagnostics);
  }

  async list(filter: { status?: RunStatus | string; plan?: string; limit?: number } = {}): Promise<RunSummary[]> {
    const clauses = ['WorkflowType = "runPlan"'];
    if (filter.status) clauses.push(listFilter(filter.status));
    if (filter.plan) clauses.push(`CadrePlan = "${filter.plan.replace(/"/g, '')}"`);
    const runs: RunSummary[] = [];
    for await (const run of this.client.workflow.list({ query: clauses.join(' AND ') })) {
      runs.push({
        workflowId: run.workflowId,
        runId: run.runId,
        plan: run.typedSearchAttributes.get(CadrePlan),
        // An ended run's CadreStatus may be stale (terminated runs cannot update it).
        status: endedAs(run) ?? run.typedSearchAttributes.get(CadreStatus) ?? 'running',
        startTime: run.startTime,
        ...(run.closeTime && { closeTime: run.closeTime }),
      });
      if (runs.length >= (filter.limit ?? 20)) break;
    }
    return runs;
  }

  /** Calls `onChange` with fresh diagnostics whenever they change, until the run ends. */
  async watch(workflowId: string, onChange: (d: Diagnostics) => void, intervalMs = 500): Promise<Diagnostics> {
    let last = '';
    let unanswered = 0;
    for (;;) {
      let diagnostics: Diagnostics;
      try {
        diagnostics = await this.diagnostics(workflowId);
        unanswered = 0;
      } catch (err) {
        // A worker that died holding the run's sticky queue: the server hands the run to another
        // worker once that queue's timeout (10 s) passes, so one unanswered query is worth a retry.
        if (!(err instanceof NoWorkerAnswered) || ++unanswered > 1) throw err;
        continue;
      }
      const key = JSON.stringify({ ...diagnostics, elapsedMs: 0 });
      if (key !== last) {
        last = key;
        onChange(diagnostics);
      }
      if (isFinal(diagnostics.status)) return diagnostics;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }

  /**
   * Running agent steps get their agent's turns, tool calls and running tools, and the team's
   * working workers their running tools (the plan learns them when the agent ends).
   */
  private async withAgentProgress(d: Diagnostics): Promise<void> {
    const live = d.steps.filter((s) => s.agent && (s.status === 'running' || s.status === 'waiting'));
    const working = (d.workers ?? []).filter((w) => !FINAL_WORKER_STATES.has(w.state));
    const ids = new Set([...live.map((s) => (s.agent as AgentSummary).workflowId), ...working.map((w) => w.workflowId)]);
    const found = new Map<string, AgentDiagnostics>();
    await Promise.all(
      [...ids].map(async (id) => {
        try {
          found.set(id, await this.bounded(QUERY_TIMEOUT_MS, () => this.client.workflow.getHandle(id).query(agentDiagnosticsQuery)));
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
      if (a) worker.running = a.running;
    }
  }

  /** The audit log of a run (its agents' model turns, tool calls, approvals): JSONL lines, no content. */
  static readAuditLog(workflowId: string, dir = auditDir()): string[] {
    const file = auditFile(dir, workflowId);
    if (!existsSync(file)) throw new CadreError(`no audit log for ${workflowId} in ${dir} (runs without agents write none; set CADRE_AUDIT_DIR as the worker does)`);
    return readFileSync(file, 'utf8').split('\n').filter((line) => line.trim() !== '');
  }

  private async liveDiagnostics(description: WorkflowExecutionDescription): Promise<Diagnostics> {
    const handle = this.client.workflow.getHandle(description.workflowId);
    try {
      const diagnostics = await this.bounded(QUERY_TIMEOUT_MS, () => handle.query(diagnosticsQuery));
      await this.withAgentProgress(diagnostics);
      return withRetries(withClientClock(diagnostics), description.raw.pendingActivities ?? []);
    } catch (err) {
      if (!isFailingWorkflowTask(err) && !(err instanceof TimedOut)) throw err;
      // While a failing task's next attempt runs, the server holds the query instead of refusing it.
      const now = isFailingWorkflowTask(err) ? description : await this.describe(description.workflowId);
      if (isFailingWorkflowTask(err) || (now.raw.pendingWorkflowTask?.attempt ?? 1) > 1) {
        // Only a task the workflow failed makes a stuck run; tasks that timed out or that the server
        // closed are a loaded or stopped worker, said below.
        const stuck = await this.stuckRun(now);
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
   * Why a run cannot answer when its workflow task keeps failing (a worker with other or broken
   * workflow code); undefined when the last retried task timed out or the server closed it as
   * housekeeping: a loaded or stopped worker, not a stuck run.
   */
  private async stuckRun(description: WorkflowExecutionDescription): Promise<string | undefined> {
    const id = description.workflowId;
    const attempt = description.raw.pendingWorkflowTask?.attempt ?? 1;
    const events = (await this.client.workflow.getHandle(id).fetchHistory()).events ?? [];
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
  private async endedDiagnostics(description: WorkflowExecutionDescription, status: RunStatus): Promise<Diagnostics> {
    const ending = await howItEnded(this.connection.workflowService, this.server.namespace, description, status);
    try {
      const handle = this.client.workflow.getHandle(description.workflowId);
      const record = await this.bounded(QUERY_TIMEOUT_MS, () => handle.query(diagnosticsQuery));
      return markEnded(record, description, status, ending);
    } catch {
      const missing = `step records need a running cadre worker (task queue "${description.taskQueue}") to replay the history`;
      return minimalRecord(description, status, ending ? `${ending}; ${missing}` : missing);
    }
  }

  /** Describes a run that must still be open to take a request. */
  private async openRun(workflowId: string): Promise<WorkflowExecutionDescription> {
    const description = await this.describe(workflowId);
    const ended = endedAs(description);
    if (ended !== undefined) throw new CadreError(`run ${workflowId} already ended: ${ended}`);
    return description;
  }

  private async describe(workflowId: string) {
    try {
      return await this.client.workflow.getHandle(workflowId).describe();
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) throw new CadreError(`no run with id "${workflowId}"`);
      throw err;
    }
  }

  /** Runs a call that needs a worker, cancelling it (not just abandoning it) after `ms`. */
  private async bounded<T>(ms: number, call: () => Promise<T>): Promise<T> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), ms);
    try {
      return await this.client.withAbortSignal(controller.signal, call);
    } catch (err) {
      if (controller.signal.aborted) throw new TimedOut();
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  private async update<T>(workflowId: string, send: () => Promise<T>): Promise<T> {
    const description = await this.openRun(workflowId);
    try {
      return await this.bounded(UPDATE_TIMEOUT_MS, send);
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) throw new CadreError(err.cause?.message ?? err.message);
      if (err instanceof TimedOut) {
        throw new CadreError(
          `no worker took the request for run ${workflowId} within ${UPDATE_TIMEOUT_MS / 1000}s: ` +
            `start one with \`cadre worker\` or \`cadre dev\` (task queue "${description.taskQueue}"), then try again`,
        );
      }
      // The run ended between our look and the request (an answer racing the last step): say how.
      if (err instanceof WorkflowNotFoundError) await this.openRun(workflowId);
      throw err;
    }
  }
}

/** Budget of the details, well under Temporal's limit for static details (DETAILS_LIMIT_BYTES). */
const DETAILS_BUDGET_BYTES = 8 * 1024;
const DETAILS_INPUTS = 20;

/** A user's text on one Markdown line, shortened visibly. */
function brief(text: string, max: number): string {
  return shorten(text.replace(/\s+/g, ' '), max);
}

/**
 * The Markdown the Web UI shows as a run's details: a summary of the plan in a form people
 * read. Long texts are shortened (`…`) and long plans cut to a budget; the full plan is the
 * run's input, so it travels once.
 */
export function planDetails(plan: CompiledPlan, inputs: Record<string, unknown>): string {
  const lines = [`**plan ${plan.name}** in \`${brief(plan.workspace, 120)}\``];
  const given = Object.entries(inputs);
  if (given.length > 0) {
    lines.push('', 'Inputs:', '', ...given.slice(0, DETAILS_INPUTS).map(([k, v]) => `- \`${brief(k, 40)}\` = \`${brief(JSON.stringify(v) ?? 'null', 80)}\``));
    if (given.length > DETAILS_INPUTS) lines.push(`- … and ${given.length - DETAILS_INPUTS} more inputs`);
  }
  lines.push('', 'Steps:', '');
  const more = (shown: number) => `- … and ${formatCount(plan.steps.length - shown)} more steps (the run's input holds the whole plan)`;
  let bytes = utf8Length(lines.join('\n'));
  for (const [i, step] of plan.steps.entries()) {
    const action = describeAction(step.action);
    const needs = step.needs.length > 5 ? `${step.needs.slice(0, 5).join(', ')} and ${step.needs.length - 5} more` : step.needs.join(', ');
    const extras = [step.needs.length > 0 && `after ${needs}`, step.when && `when ${brief(step.when, 80)}`, step.forEach !== undefined && 'for each item']
      .filter(Boolean)
      .join('; ');
    const line = `- \`${step.id}\`: ${action}${extras ? ` (${extras})` : ''}`;
    if (bytes + utf8Length(line) + utf8Length(more(i)) + 2 + utf8Length(FRAME_SLACK) + 2 > DETAILS_BUDGET_BYTES) {
      lines.push(more(i));
      break;
    }
    lines.push(line);
    bytes += utf8Length(line) + 1;
  }
  lines.push('', FRAME_SLACK);
  return lines.join('\n');
}

export function defaultWorkflowId(plan: CompiledPlan, inputs: Record<string, unknown>): string {
  const hash = createHash('sha256').update(JSON.stringify({ plan, inputs })).digest('hex').slice(0, 10);
  return `plan-${plan.name}-${hash}`;
}

/** The run's output with stored values read; if they cannot be read here, the references stay and a note says why. */
async function readStoredOutput(diagnostics: Diagnostics): Promise<Diagnostics> {
  if (!hasDeferred(diagnostics.output)) return diagnostics;
  try {
    return { ...diagnostics, output: await materialize(diagnostics.output, { stores: storesIn(diagnostics.output) }) };
  } catch (err) {
    const note = `the output keeps references to values stored on the workers: ${(err as Error).message}`;
    return { ...diagnostics, note: diagnostics.note ? `${diagnostics.note}; ${note}` : note };
  }
}

/** The final diagnostics a run cadre ended keeps in its result (completed) or failure details (failed). */
async function recordedEnd(handle: WorkflowHandle): Promise<Diagnostics | undefined> {
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

class TimedOut extends Error {}

/** A run's query that no worker answered in time: none runs, or the one that had the run just died. */
class NoWorkerAnswered extends CadreError {}

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

/** An error's message with its causes', which is where gRPC puts the server's reason. */
export function errorChain(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err; e instanceof Error && parts.length < 5; e = (e as { cause?: unknown }).cause) {
    if (!parts.includes(e.message)) parts.push(e.message);
  }
  return parts.join(': ');
}

function describeAction(action: StepAction): string {
  switch (action.kind) {
    case 'ask':
      return `ask "${brief(action.ask.question, 80)}"`;
    case 'agent':
      return `agent${action.agent.role ? ` (${brief(action.agent.role, 40)})` : ''}${action.agent.tools.length ? ` with ${action.agent.tools.join(', ')}` : ''}`;
    case 'decide':
      return `decide: ${action.decide.choices.map((c) => brief(c, 20)).join(' | ')}`;
    case 'tool':
      return action.tool;
    case 'echo':
      return 'echo';
  }
}
