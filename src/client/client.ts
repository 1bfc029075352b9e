/**
 * The typed client API of cadre: start plans, read their diagnostics, answer them,
 * pause, resume and cancel them. The `cadre` CLI is a thin layer over this.
 */
import {
  Client,
  Connection,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type WorkflowExecutionDescription,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import type { CompiledPlan } from '../plan-format/types';
import { resolveInputs } from '../plan-format/inputs';
import { checkStartPayload } from '../plan-format/payload';
import { formatIssues } from '../plan-format/issues';
import { CadreForkedFrom, CadrePlan, CadreStatus, answerUpdate, hostMovedSignal, moveHostUpdate, pauseUpdate, resumeUpdate, type Diagnostics, type RunStatus } from '../protocol/definitions';
import { hostTaskQueue } from '../protocol/task-queue';
import { auditDir, readAuditLines } from '../store/audit-files';
import { taskQueue as defaultTaskQueue } from '../protocol/task-queue';
import { CadreError } from '../errors/cadre-error';
import { CONNECT_TIMEOUT_MS, refusesConnections } from './reach';
import { endedAs, isFinal, isRunStatus, listFilter } from './run-status';
import { checkWorkflowId, defaultWorkflowId, workflowIdInterceptor } from './workflow-ids';
import type { EventCallbacks, EventsOptions, StreamCursor } from '../streaming/reader';
import { followEventsOnDemand, readEventsOnDemand } from '../streaming/reader-on-demand';
import { runLimitReached } from './limit-errors';
import { runLimitsFromEnv } from './run-limits-env';
import type { RunLimitValues } from '../plan-format/limits';
import { errorChain } from './error-chain';
import { retryUnprocessed } from './unprocessed-updates';
import type { Pricing, RunDiff } from './diff';

export { errorChain } from './error-chain';
import type { StreamEventAt } from '../streaming/events';
import { cadreDataConverter } from '../codec/data-converter';
import { type ConnectOptions, type ServerInfo, connectionOptions, resolveConnection } from './connection-config';
import { NoWorkerAnswered, TimedOut, bounded, describeRun, endedDiagnostics, liveDiagnostics, readStoredOutput, recordedEnd } from './run-diagnostics';

export { CadreError, UsageError } from '../errors/cadre-error';
export { SERVER_INFO_FILE, readServerInfo, resolveConnection, type ConnectOptions, type ServerInfo } from './connection-config';
export { isFinal } from './run-status';
export { defaultWorkflowId } from './workflow-ids';
export { SERVER_TASK_CLOSES } from './run-diagnostics';

export interface StartOptions {
  workflowId?: string;
  taskQueue?: string;
  /** The cluster's per-run limits, when lower than Temporal's defaults (default: CADRE_RUN_LIMITS). */
  limits?: Partial<RunLimitValues>;
}

export interface ForkOptions {
  /** The step the fork runs again from; every step that depends on it runs again too. */
  step: string;
  /** Restored steps' outputs replaced, by step id (what-ifs). */
  set?: Record<string, unknown>;
  /** Inputs given anew (the rest are the old run's); the steps that read them run again. */
  inputs?: Record<string, unknown>;
  /** An edited plan to fork onto: its steps whose action changed, and new steps, run again. */
  plan?: CompiledPlan;
  /** `step` is an agent: it keeps its first `turn` turns (from the old run's history) and the model goes on from there. */
  turn?: number;
  workflowId?: string;
  taskQueue?: string;
  limits?: Partial<RunLimitValues>;
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

/** How long answers, pause and resume may wait for a worker (updates are only recorded once a worker accepts them). */
const UPDATE_TIMEOUT_MS = 20_000;

/** Unanswered diagnostics queries (10 s each) in a row that `watch` rides out before it gives up. */
const WATCH_UNANSWERED_RETRIES = 3;

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
    const cannotReach = (why: string) =>
      new CadreError(
        `cannot reach Temporal at ${server.address} (from ${server.source ?? 'the caller'}; ${why}): ` +
          'start one with `cadre dev`, or set TEMPORAL_ADDRESS (or --address, or a profile with --profile)',
      );
    if (await refusesConnections(server.address)) throw cannotReach('connection refused');
    let connection: Connection;
    try {
      connection = await Connection.connect({ ...connectionOptions(server), connectTimeout: CONNECT_TIMEOUT_MS });
    } catch (err) {
      throw cannotReach((err as Error).message.split('\n')[0]);
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
    const limits = options.limits ?? runLimitsFromEnv();
    // The plan format's step kinds (and zod with them) load only for a start.
    const { planDetails } = await import('./plan-details');
    return this.startRunPlan(`plan "${plan.name}"`, {
      workflowId,
      taskQueue: options.taskQueue ?? defaultTaskQueue(),
      args: [{ plan, inputs: inputs.values, ...(limits && { limits }) }],
      memo: { plan: plan.name, ...(plan.team && { team: true }) },
      typedSearchAttributes: [
        { key: CadrePlan, value: plan.name },
        { key: CadreStatus, value: 'running' },
      ],
      staticSummary: `plan ${plan.name}`,
      staticDetails: planDetails(plan, inputs.values),
    });
  }

  /**
   * Forks a run that ended (docs/forks.md): a new run of its plan, from `step` on, the steps that do
   * not depend on it restored from the old run's records; `set` replaces restored steps' outputs.
   * The worker reads the old run and says what cannot be forked: the new run fails with why.
   */
  async fork(run: string, options: ForkOptions) {
    checkWorkflowId(run);
    const workflowId = options.workflowId ?? `${run}-fork-${Date.now().toString(36)}`;
    const limits = options.limits ?? runLimitsFromEnv();
    const fork = { from: run, step: options.step, ...(options.set && { set: options.set }), ...(options.plan && { plan: options.plan }), ...(options.turn !== undefined && { turn: options.turn }) };
    return this.startRunPlan(`a fork of ${run}`, {
      workflowId,
      taskQueue: options.taskQueue ?? defaultTaskQueue(),
      args: [{ fork, ...(options.inputs && { inputs: options.inputs }), ...(limits && { limits }) }],
      memo: { forkedFrom: { run, step: options.step } },
      typedSearchAttributes: [
        { key: CadreStatus, value: 'running' },
        { key: CadreForkedFrom, value: run },
      ],
      staticSummary: `fork of ${run} from ${options.step}${options.turn === undefined ? '' : ` after turn ${options.turn}`}`,
    });
  }

  /** Two runs of a plan, step by step: only what differs (docs/forks.md); with `pricing` (`loadPricing` of cadre.config.yaml), each step's cost and each run's too. */
  async diff(a: string, b: string, pricing?: Pricing): Promise<RunDiff> {
    checkWorkflowId(a);
    checkWorkflowId(b);
    const { diffRuns } = await import('./diff');
    return diffRuns(this, a, b, pricing);
  }

  private async startRunPlan(what: string, options: WorkflowStartOptions<(input: unknown) => Promise<unknown>>) {
    try {
      const handle = await this.client.workflow.start('runPlan', options);
      return { workflowId: handle.workflowId, runId: handle.firstExecutionRunId };
    } catch (err) {
      if (/(no mapping|not defined).*search attribute|search attribute.*(no mapping|not defined)/i.test(errorChain(err))) {
        throw new CadreError(
          `namespace "${this.server.namespace}" lacks cadre's search attributes: run \`cadre setup\` or start \`cadre worker\` (both register them), then run again`,
        );
      }
      if (err instanceof WorkflowExecutionAlreadyStartedError) {
        throw new CadreError(`${what} is already running as ${options.workflowId} (watch it with \`cadre watch ${options.workflowId}\`, or pass --id to start another run)`);
      }
      throw err;
    }
  }

  /** Diagnostics of a run, running or ended (by cadre, an operator, the server or a timeout). */
  async diagnostics(workflowId: string): Promise<Diagnostics> {
    const description = await describeRun(this, workflowId);
    const ended = endedAs(description);
    if (ended === undefined) return liveDiagnostics(this, description);
    if (!isRunStatus(ended)) throw new CadreError(`run ${workflowId} ended as ${ended}, which cadre cannot show`);
    // A run cadre ended carries its diagnostics in its result or failure; no worker needed.
    const recorded = ended === 'completed' || ended === 'failed' ? await recordedEnd(this.client.workflow.getHandle(workflowId)) : undefined;
    return recorded ?? endedDiagnostics(this, description, ended);
  }

  async answer(workflowId: string, waitId: string, value: string): Promise<void> {
    await this.update(workflowId, () => this.client.workflow.getHandle(workflowId).executeUpdate(answerUpdate, { args: [{ waitId, value }] }));
  }

  /** Lets an agent's tool call that waits for approval run; `always`: the same call again too, without asking. Resolves with the answer sent. */
  async approve(workflowId: string, waitId: string, options: { always?: boolean } = {}): Promise<string> {
    const value = options.always ? 'always' : 'approve';
    await this.answer(workflowId, waitId, value);
    return value;
  }

  /** Refuses an agent's tool call; the agent reads the denial (and the reason) as the call's result. Resolves with the answer sent. */
  async deny(workflowId: string, waitId: string, reason?: string): Promise<string> {
    const value = reason ? `deny:${reason}` : 'deny';
    await this.answer(workflowId, waitId, value);
    return value;
  }

  async pause(workflowId: string): Promise<void> {
    await this.update(workflowId, () => this.client.workflow.getHandle(workflowId).executeUpdate(pauseUpdate));
  }

  /**
   * `cadre move`: the run gives up on its host for `to`, which must hold its workspace; then each of
   * its agents and forEach chunks still running is told (Temporal's RootWorkflowId finds them). Returns the hosts and how many of each were told.
   */
  async moveHost(workflowId: string, to: string): Promise<{ from: string; to: string; agents: number; chunks: number }> {
    const moved = await this.update(workflowId, () => this.client.workflow.getHandle(workflowId).executeUpdate(moveHostUpdate, { args: [{ to }] }));
    const { taskQueue } = await this.client.workflow.getHandle(workflowId).describe();
    const queues = { from: hostTaskQueue(moved.from, taskQueue), to: hostTaskQueue(moved.to, taskQueue) };
    const told = { agents: 0, chunks: 0 };
    for await (const run of this.client.workflow.list({ query: `RootWorkflowId = ${JSON.stringify(workflowId)} AND ExecutionStatus = "Running"` })) {
      if (run.workflowId === workflowId) continue;
      await this.client.workflow.getHandle(run.workflowId, run.runId).signal(hostMovedSignal, queues);
      told[run.type === 'runItems' ? 'chunks' : 'agents']++;
    }
    return { ...moved, ...told };
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
    await describeRun(this, workflowId); // unknown ids fail here, not after a wait
    const handle = this.client.workflow.getHandle(workflowId);
    try {
      await handle.result();
    } catch {
      // runs that did not complete still have diagnostics
    }
    const diagnostics = await this.diagnostics(workflowId);
    return options.readStored === false ? diagnostics : readStoredOutput(diagnostics);
  }

  async list(filter: { status?: RunStatus | string; plan?: string; forksOf?: string; limit?: number } = {}): Promise<RunSummary[]> {
    const clauses = ['WorkflowType = "runPlan"'];
    if (filter.status) clauses.push(listFilter(filter.status));
    if (filter.plan) clauses.push(`CadrePlan = "${filter.plan.replace(/"/g, '')}"`);
    if (filter.forksOf) clauses.push(`${CadreForkedFrom.name} = ${JSON.stringify(filter.forksOf)}`);
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

  /**
   * The run's events as they happen (docs/streaming.md): its steps, waits and end, and its agents'
   * text, tool calls and results while the model is still writing, as one feed (an agent's events
   * carry `stream`, its workflow id). Resume with `from`: the run's next offset, or the cursor
   * `followEvents` resolves with (`advance` keeps one from the events); the iterator ends after
   * `run_completed`.
   */
  events(workflowId: string, options: EventsOptions = {}): AsyncGenerator<StreamEventAt, void, undefined> {
    checkWorkflowId(workflowId);
    return readEventsOnDemand(this.client, workflowId, options);
  }

  /** The same events through callbacks (`onTextDelta`, `onToolCall`, …); resolves with the cursor to resume from. */
  followEvents(workflowId: string, callbacks: EventCallbacks, options: EventsOptions = {}): Promise<StreamCursor> {
    checkWorkflowId(workflowId);
    return followEventsOnDemand(this.client, workflowId, callbacks, options);
  }

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
        // worker once that queue's timeout (10 s) passes, so an unanswered query is worth a retry;
        // a worker loaded for seconds (a machine running many) gets 40 s in all before we give up.
        if (!(err instanceof NoWorkerAnswered) || ++unanswered > WATCH_UNANSWERED_RETRIES) throw err;
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

  /** The audit log of a run (its agents' model turns, tool calls, approvals): JSONL lines, no content. */
  static readAuditLog(workflowId: string, dir = auditDir()): string[] {
    return readAuditLines(dir, workflowId);
  }

  /** Describes a run that must still be open to take a request. */
  private async openRun(workflowId: string): Promise<WorkflowExecutionDescription> {
    const description = await describeRun(this, workflowId);
    const ended = endedAs(description);
    if (ended !== undefined) throw new CadreError(`run ${workflowId} already ended: ${ended}`);
    return description;
  }

  private async update<T>(workflowId: string, send: () => Promise<T>): Promise<T> {
    const description = await this.openRun(workflowId);
    try {
      return await bounded(this, UPDATE_TIMEOUT_MS, () => retryUnprocessed(send));
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) throw new CadreError(err.cause?.message ?? err.message);
      const limit = runLimitReached(err, workflowId);
      if (limit) throw limit;
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

