/**
 * `runPlan`: runs a validated plan as a DAG. Every step starts as soon as the steps
 * it needs have finished; tools run as activities with the step's timeout and retry
 * policy; humans answer through the `answer` update; abort and cancellation run the
 * `compensate` actions of completed steps in reverse order.
 */
import type { SandboxSpec } from '../../sandbox/profile';
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities, ToolResult } from '../../activities';
import { durationMs } from '../../spec/duration';
import { evaluateCondition } from '../../spec/expressions';
import { BLOB_THRESHOLD_BYTES, DEFAULT_FOREACH_CONCURRENCY, FOREACH_CHILD_THRESHOLD, PAYLOAD_LIMIT_BYTES } from '../../spec/limits';
import { type Stored, describeStored, hasDeferred, isDeferredRead, isStored } from '../../spec/refs';
import { type ResolveOptions, resolveTemplates } from '../../spec/templates';
import type { CompiledPlan, CompiledStep, PlanDocumentInput, RunPlanInput, ToolCall } from '../../spec/types';
import { AgentSteps } from './agent-steps';
import { compileDocument, isPlanDocument } from './plan-document';
import { Team } from '../team/team';
import { isoAt, nowMs } from '../common/clock';
import {
  CadreStatus,
  FAILURE_CHOICES,
  STEP_STATUSES,
  TIMEOUT_CHOICES,
  answerSignal,
  answerUpdate,
  approveSignal,
  diagnosticsQuery,
  pauseSignal,
  pauseUpdate,
  resumeSignal,
  resumeUpdate,
  type CompensationRecord,
  type Diagnostics,
  type PlanResult,
  type PlanStatus,
  type StepRecord,
  type StepStatus,
  type WaitKind,
} from '../common/definitions';
import { DETAILS_ALL_STEPS_UP_TO, currentDetails } from './details';
import { StepFailedError, describeFailure, type StepError } from '../common/failures';
import { Readiness } from './readiness';
import { DEFAULT_STEP_TIMEOUT, compensationActivityOptions } from './step-options';
import { ActivityIds, storedValues } from './tool-call';
import { ChunkFailure, ChunkedLoop, type LoopList } from './foreach-chunks';
import { ExpressionNames, listItems } from './stored';
import { HumanWaits } from './waits';
import { type PlanRunContext, kindOf } from './kinds';
import { runEnded, stepEnded, stepStarted, toolLabel } from './metrics';
import { sizeOf } from '../common/sizes';
import { WorktreeLeases } from './worktrees';
import { recordFinishedRun } from './analytics';

const MAX_AUTO_EXTENSIONS = 3;
const PATCH_STEP_ACTIVITY_IDS = 'step-activity-ids';
/**
 * Runs that start on this code get: strict templates (a missing value fails its step), first
 * answer wins, failures of the run instead of workflow-task failures for plan data, local
 * activities for cheap tools. Runs recorded before replay without it.
 */
const PATCH_HARDENED = 'engine-hardening';
/** Runs that start on this code take signals (answer, pause, resume, approve); older ones dropped them and must still. */
const PATCH_SIGNALS = 'plan-signals';
const MAX_SIGNAL_ERRORS = 50;
/** Temporal refuses a run's result or failure over its payload limit; stay under it with room for the envelope. */
export const MAX_RESULT_BYTES = PAYLOAD_LIMIT_BYTES - 64 * 1024;
const TERMINAL = new Set<StepStatus>(['completed', 'skipped', 'failed', 'cancelled']);

type Decision = 'retry' | 'skip' | 'abort' | 'extend';

export async function runPlan(input: RunPlanInput | PlanDocumentInput): Promise<PlanResult> {
  const start = isPlanDocument(input) ? await compileDocument(input) : input;
  let run: PlanRun;
  try {
    run = new PlanRun(start);
  } catch (err) {
    // Input no validator checked (a hand-made start): end the run, do not fail its tasks forever.
    throw ApplicationFailure.create({ type: 'PlanFailed', message: `the plan cannot run: ${messageOf(err)}`, nonRetryable: true });
  }
  return run.run();
}

class PlanRun implements PlanRunContext {
  readonly plan: CompiledPlan;
  private readonly stepsById = new Map<string, CompiledStep>();
  private readonly records = new Map<string, StepRecord>();
  /** What templates and `when` read as `steps`: kept up to date instead of rebuilt per read. */
  private readonly stepScope: Record<string, { output: unknown; status: StepStatus }> = {};
  private readonly counts = Object.fromEntries(STEP_STATUSES.map((s) => [s, 0])) as Record<StepStatus, number>;
  /** Running, waiting and failed steps: what the Web UI lists for a long plan. */
  private readonly notable = new Set<string>();
  private terminal = 0;
  private readonly readiness: Readiness;
  private readonly waits: HumanWaits;
  readonly hardened: boolean;
  readonly templates: ResolveOptions;
  private readonly names = new ExpressionNames();
  /** Long forEach loops by step, kept across re-runs of the step. */
  private readonly loops = new Map<string, ChunkedLoop>();
  private readonly errors: { step: string; message: string }[] = [];
  private signalErrors = 0;
  private readonly compensations: CompensationRecord[] = [];
  private readonly completionOrder: string[] = [];
  private readonly startedAtMs = nowMs();
  private endedAtMs?: number;
  private paused = false;
  private finalStatus?: 'completed' | 'failed' | 'cancelled';
  private abortReason?: string;
  private publishedStatus?: PlanStatus;
  private output?: unknown;
  /** Activity ids named after steps; runs recorded before that naming replay without (patch step-activity-ids). */
  readonly activityIds = new ActivityIds(() => patched(PATCH_STEP_ACTIVITY_IDS));
  /** Bumped on every change the scheduler must look at. */
  private version = 0;
  /** Git worktrees the steps work in (steps with `worktree`). */
  readonly worktrees: WorktreeLeases;
  /** Agent and decide steps' child workflows, and what they wait for. */
  readonly agents: AgentSteps;
  /** A plan with a `team` section: its agents are workers that ask the team before a person. */
  readonly team?: Team;

  constructor(private readonly input: RunPlanInput) {
    this.plan = input.plan;
    for (const step of this.plan.steps) {
      if (this.stepsById.has(step.id)) throw new Error(`two steps have the id "${step.id}"`);
      this.stepsById.set(step.id, step);
      this.records.set(step.id, { id: step.id, status: 'pending', attempts: 0 });
      this.stepScope[step.id] = { output: undefined, status: 'pending' };
    }
    for (const step of this.plan.steps) {
      const unknown = step.needs.find((need) => !this.stepsById.has(need));
      if (unknown !== undefined) throw new Error(`step "${step.id}" needs unknown step "${unknown}"`);
    }
    this.counts.pending = this.plan.steps.length;
    this.readiness = new Readiness(this.plan.steps);
    this.hardened = patched(PATCH_HARDENED);
    this.templates = { strict: this.hardened };
    this.waits = new HumanWaits(this.hardened, () => this.changed());
    this.worktrees = new WorktreeLeases(this.plan.name, () => this.changed());
    this.agents = new AgentSteps(
      (id, waiting) => this.agentWaiting(id, waiting),
      // Workers' states are read by queries only: a signal does not wake the scheduler.
      (worker) => this.team?.workerChanged(worker),
    );
    if (this.plan.team) {
      this.team = new Team(
        this.plan.team,
        this.plan.workspace,
        this.plan.sandbox,
        (workflowId, step, role) => this.agents.track(workflowId, step, { role }),
        () => this.changed(),
      );
    }
    setHandler(diagnosticsQuery, () => this.diagnostics());
    setHandler(
      answerUpdate,
      async ({ waitId, value }) => {
        if (this.agents.knows(waitId)) await this.agents.forward(waitId, value);
        else this.waits.accept(waitId, value);
        return { accepted: true as const };
      },
      {
        validator: (answer) =>
          this.agents.knows(answer?.waitId) ? this.agents.validate(answer?.waitId, answer?.value) : this.waits.validate(answer?.waitId, answer?.value),
      },
    );
    setHandler(pauseUpdate, () => this.setPaused(true));
    setHandler(resumeUpdate, () => this.setPaused(false));
    if (patched(PATCH_SIGNALS)) this.takeSignals();
  }

  /** The updates' effects by signal; what cannot apply is recorded, never thrown (a signal has no one to answer). */
  private takeSignals(): void {
    const attempt = (name: string, waitId: unknown, apply: () => void | Promise<void>) => {
      try {
        const done = apply();
        if (done) done.catch((err: unknown) => this.signalError(name, waitId, err));
      } catch (err) {
        this.signalError(name, waitId, err);
      }
    };
    const answer = (name: string, waitId: unknown, value: unknown) =>
      attempt(name, waitId, () => {
        if (this.agents.knows(waitId)) {
          this.agents.validate(waitId, value);
          return this.agents.forward(waitId as string, value as string);
        }
        this.waits.validate(waitId, value);
        this.waits.accept(waitId as string, value as string);
      });
    setHandler(answerSignal, (a) => answer('answer', a?.waitId, a?.value));
    setHandler(approveSignal, (a) => {
      const reason = typeof a?.reason === 'string' && a.reason.trim() ? `:${a.reason}` : '';
      answer('approve', a?.waitId, a?.approve === false ? `deny${reason}` : 'approve');
    });
    setHandler(pauseSignal, () => attempt('pause', undefined, () => void this.setPaused(true)));
    setHandler(resumeSignal, () => attempt('resume', undefined, () => void this.setPaused(false)));
  }

  private signalError(name: string, waitId: unknown, err: unknown): void {
    // Anyone can send signals: a flood of bad ones must not grow the run's record without bound.
    if (++this.signalErrors > MAX_SIGNAL_ERRORS) return;
    const step = typeof waitId === 'string' && waitId.length <= 200 ? waitId : '(signal)';
    const more = this.signalErrors === MAX_SIGNAL_ERRORS ? ' (later signals that cannot apply are not recorded)' : '';
    this.errors.push({ step, message: `signal ${name} not applied: ${messageOf(err).slice(0, 500)}${more}` });
    this.changed();
  }

  private setPaused(paused: boolean): { paused: boolean } {
    this.paused = paused;
    for (const loop of this.loops.values()) loop.setPaused(paused);
    this.changed();
    return { paused };
  }

  async run(): Promise<PlanResult> {
    try {
      return await this.runSteps();
    } catch (err) {
      if (!this.hardened || isCancellation(err) || err instanceof ApplicationFailure) throw err;
      // A fault in cadre's own workflow code: end the run with it rather than retry the task forever.
      this.abortReason ??= `cadre internal error: ${messageOf(err)}`;
      this.finish('failed');
      throw this.planFailed();
    } finally {
      // Every way a run ends (completed, aborted, cancelled, an internal error) is recorded once.
      if (this.finalStatus) await CancellationScope.nonCancellable(() => this.recordAnalytics());
    }
  }

  private async recordAnalytics(): Promise<void> {
    await recordFinishedRun({
      plan: this.plan.name,
      status: this.finalStatus as 'completed' | 'failed' | 'cancelled',
      startedMs: this.startedAtMs,
      endedMs: this.endedAtMs ?? nowMs(),
      steps: this.plan.steps.map((step, position) => {
        const r = this.record(step.id);
        return { id: step.id, position, tool: toolLabel(step.action), status: r.status, attempts: r.attempts, ...(r.durationMs !== undefined && { durationMs: r.durationMs }) };
      }),
      humanWaits: this.waits.ended,
    });
  }

  private async runSteps(): Promise<PlanResult> {
    const root = CancellationScope.current();
    const stepsScope = new CancellationScope();
    const running = new Map<string, Promise<void>>();
    try {
      this.publishStatus();
      // Patched runs schedule inside the steps' scope, so a step starts with a plain call, not a
      // scope of its own (fewer promises a step: each one a workflow makes costs, the SDK records its stack).
      if (this.hardened) await stepsScope.run(() => this.schedule(stepsScope, running));
      else await this.schedule(stepsScope, running);
    } catch (err) {
      if (!isCancellation(err)) throw err;
      // An abort cancels the steps' scope, and in patched runs the scheduler's wait with it: on to the abort below.
      if (this.abortReason && !root.consideredCancelled) return this.aborted(running);
      // Temporal cancellation (`cadre cancel`, `temporal workflow cancel`): clean up, then end as cancelled.
      await CancellationScope.nonCancellable(async () => {
        await Promise.allSettled(running.values());
        this.markUnfinished('run cancelled');
        await this.compensate();
        if (this.worktrees.size > 0) await this.worktrees.release('cancelled');
      });
      this.finish('cancelled');
      throw err;
    }
    if (this.abortReason) return this.aborted(running);
    // Runs without worktrees make no call and no await here: their commands stay as they were recorded.
    if (this.worktrees.size > 0) await this.worktrees.release('completed');
    return this.complete();
  }

  /** Starts steps as they become ready, until none runs and none can start (or an abort stops it). */
  private async schedule(stepsScope: CancellationScope, running: Map<string, Promise<void>>): Promise<void> {
    for (;;) {
      if (!this.paused && !this.abortReason) {
        for (const id of this.readiness.take()) this.start(this.stepsById.get(id) as CompiledStep, stepsScope, running);
      }
      this.publishStatus();
      if (this.abortReason && running.size > 0) stepsScope.cancel();
      if (running.size === 0 && (this.abortReason || this.terminal === this.plan.steps.length)) return;
      const seen = this.version;
      await condition(() => this.version !== seen);
    }
  }

  /** Waits for the cancelled steps, runs compensations, and fails the run with the abort's reason. */
  private async aborted(running: Map<string, Promise<void>>): Promise<never> {
    await Promise.allSettled(running.values());
    this.markUnfinished('plan aborted');
    await CancellationScope.nonCancellable(() => this.compensate());
    if (this.worktrees.size > 0) await CancellationScope.nonCancellable(() => this.worktrees.release('failed'));
    this.finish('failed');
    throw this.planFailed();
  }

  /** Starts a step in the steps' cancellation scope; its promise settles when the step is done. */
  private start(step: CompiledStep, scope: CancellationScope, running: Map<string, Promise<void>>): void {
    // Patched runs schedule inside that scope already: the step's call inherits it.
    const done = this.hardened ? this.executeStep(step) : scope.run(() => this.executeStep(step));
    // Settled after the step's promise, never inside it: a step can end without awaiting (a false
    // `when`), before `running` holds it.
    running.set(
      step.id,
      done.then(
        () => this.settle(running, step.id),
        (err) => {
          this.settle(running, step.id);
          if (isCancellation(err)) return;
          // executeStep handles every step failure; what reaches here is a fault in cadre itself.
          if (!this.hardened) throw err;
          this.abortReason ??= `cadre internal error in step "${step.id}": ${messageOf(err)}`;
        },
      ),
    );
  }

  /** The plan's output, then the result; either one too big or unreadable fails the run with the reason. */
  private complete(): PlanResult {
    try {
      this.output = this.plan.output === undefined ? undefined : resolveTemplates(this.plan.output, this.scope(), this.templates);
    } catch (err) {
      if (!this.hardened) throw err;
      this.abortReason = `the plan's output cannot be read: ${messageOf(err)}`;
      this.finish('failed');
      throw this.planFailed();
    }
    this.finish('completed');
    const result = this.diagnostics() as PlanResult;
    if (this.hardened) {
      const size = sizeOf(result);
      if (size > MAX_RESULT_BYTES) {
        delete this.output;
        this.abortReason = `the plan's output is ${size} bytes; a run's result holds at most ${MAX_RESULT_BYTES}: write big results to a file (fs.write) and output its path`;
        this.finish('failed');
        throw this.planFailed();
      }
    }
    return result;
  }

  private planFailed(): ApplicationFailure {
    return ApplicationFailure.create({
      type: 'PlanFailed',
      message: this.abortReason ?? 'the plan failed',
      nonRetryable: true,
      details: [this.failureDiagnostics()],
    });
  }

  private settle(running: Map<string, Promise<void>>, id: string): void {
    running.delete(id);
    this.changed();
  }

  changed(): void {
    this.version++;
  }

  record(id: string): StepRecord {
    return this.records.get(id) as StepRecord;
  }

  /** Every status change goes through here, so counts, readiness and what templates read stay in step. */
  private setStatus(id: string, status: StepStatus): void {
    const record = this.record(id);
    const before = record.status;
    if (before === status) return;
    record.status = status;
    this.stepScope[id].status = status;
    this.counts[before]--;
    this.counts[status]++;
    const tool = toolLabel((this.stepsById.get(id) as CompiledStep).action);
    if (status === 'running' && before !== 'waiting') stepStarted(tool);
    else if (status === 'completed' || status === 'failed' || status === 'skipped') stepEnded(tool, status);
    if (TERMINAL.has(status) && !TERMINAL.has(before)) this.terminal++;
    if (status === 'running' || status === 'waiting' || status === 'failed') this.notable.add(id);
    else this.notable.delete(id);
    if (status === 'completed' || status === 'skipped') this.readiness.satisfied(id);
  }

  // ---- one step -------------------------------------------------------------

  /** One step, with its failures decided (retry, extend, skip, abort) until it ends. */
  private async executeStep(step: CompiledStep): Promise<void> {
    const record = this.record(step.id);
    const started = nowMs();
    this.setStatus(step.id, 'running');
    record.startedAt = isoAt(started);
    this.changed();
    const end = (status: StepStatus, note?: string) => {
      record.endedAt = isoAt(nowMs());
      record.durationMs = nowMs() - started;
      if (note) record.note = note;
      this.setStatus(step.id, status);
      this.changed();
    };
    // People and agents may take a day: their kinds wait without limit unless the step sets a timeout.
    let timeout = step.timeout ?? (kindOf(step.action).unbounded ? undefined : DEFAULT_STEP_TIMEOUT);
    let extensions = 0;
    const itemResults = new Map<number, unknown>();
    for (;;) {
      try {
        if (step.when !== undefined) {
          const holds = this.conditionHolds(step.when);
          // No await unless an activity decides: an await, even of a boolean, would reorder commands.
          if (!(typeof holds === 'boolean' ? holds : await holds)) {
            end('skipped', `when "${step.when}" was false`);
            return;
          }
        }
        const output =
          step.forEach !== undefined ? await this.runForEach(step, timeout, itemResults) : this.counted(step, await this.runAction(step, this.scope(), timeout, step.id));
        this.stepScope[step.id].output = output;
        this.completionOrder.push(step.id);
        delete record.error;
        end('completed');
        return;
      } catch (err) {
        if (isCancellation(err)) {
          end('cancelled', this.abortReason ? 'plan aborted' : 'run cancelled');
          throw err;
        }
        const failure = describeFailure(err);
        record.attempts += failure.attempts;
        record.error = failure.message;
        this.changed();
        const { decision, extendBy } = await this.decide(step, failure, extensions);
        if (decision === 'retry') continue;
        if (decision === 'extend') {
          extensions++;
          timeout = extendBy ?? `${durationMs(timeout ?? DEFAULT_STEP_TIMEOUT) * 2}ms`;
          continue;
        }
        this.errors.push({ step: step.id, message: failure.message });
        if (decision === 'skip') {
          end('skipped', `skipped after ${failure.timedOut ? 'timeout' : 'failure'}`);
          return;
        }
        end('failed');
        this.abortReason ??= `step "${step.id}" failed: ${failure.message}`;
        return;
      }
    }
  }

  /**
   * A `when`, evaluated here, or by an activity when it reads a stored output. (Only that case
   * awaits: runs recorded before stored outputs must issue their commands in the same order.)
   */
  private conditionHolds(expression: string): boolean | Promise<boolean> {
    const scope = this.scope();
    if (!this.hardened || !this.names.readsStored(expression, scope)) return evaluateCondition(expression, scope);
    return storedValues().evaluateCondition({ expression, scope: this.names.subset(expression, scope), workspace: this.plan.workspace });
  }

  /** What to do about a failed or timed-out step, by the plan's strategy or a human's answer. */
  private async decide(step: CompiledStep, failure: StepError, extensions: number): Promise<{ decision: Decision; extendBy?: string }> {
    if (this.abortReason) return { decision: 'abort' };
    const strategy = failure.timedOut ? step.onTimeout : step.onFailure;
    if (strategy === 'extend') return { decision: extensions < MAX_AUTO_EXTENSIONS ? 'extend' : 'abort' };
    // With `onFailure: retry` the activity already retried without limit; what reaches here is permanent.
    if (strategy === 'retry') return { decision: 'abort' };
    if (strategy !== 'ask') return { decision: strategy };
    const kind: WaitKind = failure.timedOut ? 'timeout' : 'failure';
    const choices = failure.timedOut ? TIMEOUT_CHOICES : FAILURE_CHOICES;
    const prompt = `Step "${step.id}" ${failure.timedOut ? 'timed out' : 'failed'}: ${failure.message}. ${choices.join(', ')}?`;
    const answer = await this.waitForHuman(step.id, kind, prompt, choices);
    const [decision, extra] = answer?.split(':') ?? [];
    return { decision: (decision as Decision | undefined) ?? 'abort', ...(extra && { extendBy: extra.trim() }) };
  }

  private async runForEach(step: CompiledStep, timeout: string | undefined, results: Map<number, unknown>): Promise<unknown> {
    let list = resolveTemplates(step.forEach, this.scope(), this.templates);
    if (this.hardened && isDeferredRead(list)) list = await this.resolveValue(list, BLOB_THRESHOLD_BYTES);
    const items = listItems(list, typeof step.forEach === 'string' ? step.forEach : '');
    if (!items) {
      throw new StepFailedError({ message: `forEach did not give a list (got ${describeValue(list)})`, timedOut: false, attempts: 0 });
    }
    if (this.hardened && items.length > FOREACH_CHILD_THRESHOLD && step.worktree) {
      throw new StepFailedError({ message: `a forEach in a worktree runs at most ${FOREACH_CHILD_THRESHOLD} items; this one has ${items.length}`, timedOut: false, attempts: 0 });
    }
    if (items.length > FOREACH_CHILD_THRESHOLD && !kindOf(step.action).chunked) {
      throw new StepFailedError({ message: `a forEach of ${step.action.kind} steps runs at most ${FOREACH_CHILD_THRESHOLD} items; this one has ${items.length}`, timedOut: false, attempts: 0 });
    }
    if (this.hardened && items.length > FOREACH_CHILD_THRESHOLD) return this.runChunked(step, list, items.length, timeout ?? DEFAULT_STEP_TIMEOUT);
    const record = this.record(step.id);
    record.items = { total: items.length, completed: results.size };
    let next = 0;
    let firstError: unknown;
    const lane = async () => {
      while (next < items.length && firstError === undefined) {
        const index = next++;
        if (results.has(index)) continue;
        await condition(() => !this.paused);
        try {
          const scope = { ...this.scope(), [step.as]: items.at(index), index };
          results.set(index, this.counted(step, await this.runAction(step, scope, timeout, `${step.id}[${index}]`)));
          record.items = { total: items.length, completed: results.size };
          this.changed();
        } catch (err) {
          firstError ??= err;
        }
      }
    };
    const width = Math.min(step.concurrency ?? DEFAULT_FOREACH_CONCURRENCY, items.length);
    await Promise.all(Array.from({ length: width }, lane));
    if (firstError !== undefined) throw firstError;
    return Array.from({ length: items.length }, (_, i) => results.get(i));
  }

  /** A long forEach in child workflows (foreach-chunks.ts); the loop lives on across the step's re-runs. */
  private async runChunked(step: CompiledStep, list: unknown, length: number, timeout: string): Promise<unknown> {
    const record = this.record(step.id);
    let loop = this.loops.get(step.id);
    if (!loop) {
      loop = new ChunkedLoop(step, {
        plan: this.plan.name,
        workspace: this.plan.workspace,
        ...this.sandbox(),
        isPaused: () => this.paused,
        progress: (completed, attempts) => {
          record.items = { total: length, completed };
          record.attempts += attempts;
          this.changed();
        },
      });
      this.loops.set(step.id, loop);
    }
    record.items = { total: length, completed: record.items?.completed ?? 0 };
    const scope = { steps: Object.fromEntries(step.needs.map((id) => [id, this.stepScope[id]])), inputs: this.input.inputs };
    const items: LoopList = Array.isArray(list) ? { values: list } : { list: list as Stored, source: typeof step.forEach === 'string' ? step.forEach : '' };
    try {
      return await loop.run(items, length, scope, timeout, step.concurrency ?? DEFAULT_FOREACH_CONCURRENCY);
    } catch (err) {
      // Attempts were counted as the chunks ended.
      if (err instanceof ChunkFailure) throw new StepFailedError({ ...err.failure, attempts: 0 });
      throw err;
    }
  }

  /** An action's output, its attempts added to the step's record. */
  private counted(step: CompiledStep, result: ToolResult): unknown {
    this.record(step.id).attempts += result.attempt;
    return result.output;
  }

  /**
   * Runs the step's action once (with Temporal's retries for tools): its output and the attempts it
   * took. Not an async function, and the tool's own promise is returned as it is: every step takes
   * this path, and each promise a workflow makes costs (the SDK records its stack). Callers await it
   * inside try blocks.
   */
  private runAction(step: CompiledStep, scope: Record<string, unknown>, timeout: string | undefined, label: string): Promise<ToolResult> {
    return kindOf(step.action).run(this, step, scope, timeout, label);
  }

  /** An agent that starts or stops waiting for approval shows it as its step's status. */
  private agentWaiting(id: string, waiting: boolean): void {
    const status = this.record(id).status;
    if (waiting && status === 'running') this.setStatus(id, 'waiting');
    else if (!waiting && status === 'waiting' && !this.waits.list().some((w) => w.id === id)) this.setStatus(id, 'running');
    this.changed();
    this.publishStatus();
  }

  /** Tools of runs that store big outputs outside history say so; older runs keep theirs inline. */
  inline(): { inlineLimit?: number } {
    return this.hardened ? { inlineLimit: BLOB_THRESHOLD_BYTES } : {};
  }

  /** The plan's sandbox and egress, for every tool call and agent of the run. */
  sandbox(): { sandbox?: SandboxSpec } {
    return this.plan.sandbox ? { sandbox: this.plan.sandbox } : {};
  }

  /** A question or prompt as text; read through an activity (awaited) only when it quotes a stored output. */
  asText(resolved: unknown, limit: number, what: string, render: (value: unknown) => string): string | Promise<string> {
    if (!this.hardened || !hasDeferred(resolved)) return render(resolved);
    return this.resolveValue(resolved, limit).then((text) => {
      if (isStored(text)) {
        throw new StepFailedError({ message: `the ${what} is ${describeStored(text)}; a ${what} holds at most ${limit} bytes`, timedOut: false, attempts: 0 });
      }
      return render(text);
    });
  }

  /** A value with stored parts, read by a local activity: inline up to `inlineLimit` bytes, stored again beyond. */
  resolveValue(value: unknown, inlineLimit: number): Promise<unknown> {
    return storedValues().resolveValue({ value, workspace: this.plan.workspace, inlineLimit });
  }

  // ---- humans ---------------------------------------------------------------

  async waitForHuman(id: string, kind: WaitKind, prompt: string, choices?: string[], timeout?: string): Promise<string | undefined> {
    const record = this.record(id);
    return this.waits.wait(
      { id, kind, prompt, ...(choices && { choices }), ...(timeout && { timeout }) },
      {
        opened: () => {
          this.setStatus(id, 'waiting');
          this.changed();
          this.publishStatus();
        },
        closed: () => {
          if (record.status === 'waiting') this.setStatus(id, 'running');
          this.changed();
          this.publishStatus();
        },
      },
    );
  }

  // ---- the end of a run -----------------------------------------------------

  private markUnfinished(note: string): void {
    for (const record of this.records.values()) {
      if (!TERMINAL.has(record.status)) {
        record.note = record.startedAt ? note : `not started: ${note}`;
        this.setStatus(record.id, 'cancelled');
      }
    }
    this.waits.clear();
  }

  /** Runs the `compensate` actions of completed steps, most recent first; a failure is recorded, not fatal. */
  private async compensate(): Promise<void> {
    const completed = [...this.completionOrder].reverse();
    for (const id of completed) {
      const step = this.stepsById.get(id) as CompiledStep;
      if (!step.compensate) continue;
      try {
        await this.runCompensation(step, step.compensate);
        this.compensations.push({ step: id, status: 'completed' });
      } catch (err) {
        this.compensations.push({ step: id, status: 'failed', error: describeFailure(err).message });
      }
      this.changed();
    }
  }

  private async runCompensation(step: CompiledStep, call: ToolCall): Promise<void> {
    const params = resolveTemplates(call.with, this.scope(), this.templates) as Record<string, unknown>;
    if (call.tool === 'sleep') {
      await sleep(durationMs(String(params.duration)), { summary: `compensate ${step.id}` });
      return;
    }
    const activities = proxyActivities<Activities>({
      ...this.activityIds.next(`compensate:${step.id}`),
      ...compensationActivityOptions(`compensate ${step.id}`),
    });
    await activities.runTool({ tool: call.tool, params, workspace: this.plan.workspace, stepId: step.id, ...this.inline(), ...this.sandbox() });
  }

  private finish(status: 'completed' | 'failed' | 'cancelled'): void {
    this.finalStatus = status;
    this.endedAtMs = nowMs();
    runEnded(this.plan.name, status, this.endedAtMs - this.startedAtMs);
    this.publishStatus();
  }

  // ---- what clients see -----------------------------------------------------

  private scope(): Record<string, unknown> {
    return { steps: this.stepScope, inputs: this.input.inputs };
  }

  private status(): PlanStatus {
    if (this.finalStatus) return this.finalStatus;
    if (this.waits.size > 0 || this.agents.waiting > 0) return 'waiting';
    return this.paused ? 'paused' : 'running';
  }

  /** Keeps the `CadreStatus` search attribute in step with the run, so lists can find runs waiting on a human. */
  private publishStatus(): void {
    const status = this.status();
    const all = this.plan.steps.length <= DETAILS_ALL_STEPS_UP_TO;
    // Shown as "Current Details" in the Web UI: metadata read by a query, not history.
    setCurrentDetails(
      currentDetails({
        workflowId: workflowInfo().workflowId,
        status,
        total: this.plan.steps.length,
        counts: this.counts,
        steps: all ? this.plan.steps.map((s) => this.record(s.id)) : [...this.notable].map((id) => this.record(id)),
        waiting: this.waitingList(),
      }),
    );
    if (status === this.publishedStatus) return;
    this.publishedStatus = status;
    upsertSearchAttributes([{ key: CadreStatus, value: status }]);
  }

  private waitingList() {
    return this.agents.waiting > 0 ? [...this.waits.list(), ...this.agents.list()] : this.waits.list();
  }

  private stepRecords(): StepRecord[] {
    return this.plan.steps.map((s) => ({ ...this.record(s.id) }));
  }

  private diagnostics(): Diagnostics {
    const end = this.endedAtMs ?? nowMs();
    return {
      plan: this.plan.name,
      status: this.status(),
      paused: this.paused,
      startedAt: isoAt(this.startedAtMs),
      ...(this.endedAtMs !== undefined && { endedAt: isoAt(this.endedAtMs) }),
      elapsedMs: end - this.startedAtMs,
      steps: this.stepRecords(),
      waiting: this.waitingList(),
      errors: [...this.errors],
      compensations: [...this.compensations],
      ...(this.output !== undefined && { output: this.output }),
      ...(this.finalStatus === 'failed' && this.abortReason && { reason: this.abortReason }),
      ...(this.worktrees.size > 0 && { worktrees: this.worktrees.records() }),
      ...(this.agents.workers().length > 0 && { workers: this.agents.workers() }),
      ...(this.team && this.team.records().length > 0 && { consultations: this.team.records() }),
    };
  }

  /** Diagnostics small enough to travel in a failure: a huge plan keeps only its unfinished and failed steps. */
  private failureDiagnostics(): Diagnostics {
    const full = this.diagnostics();
    if (!this.hardened || sizeOf(full) <= MAX_RESULT_BYTES) return full;
    const kept = full.steps.filter((s) => s.status !== 'completed' && s.status !== 'skipped').slice(0, 200);
    return { ...full, steps: kept, errors: full.errors.slice(0, 200), note: `step records shortened to fit a failure; \`cadre status\` shows all ${full.steps.length}` };
  }
}

function describeValue(value: unknown): string {
  if (isStored(value)) return describeStored(value);
  return value === null ? 'null' : typeof value;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
