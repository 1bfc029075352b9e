/**
 * `runPlan`: runs a validated plan as a DAG. Every step starts as soon as the steps
 * it needs have finished; tools run as activities with the step's timeout and retry
 * policy; humans answer through the `answer` update; abort and cancellation run the
 * `compensate` actions of completed steps in reverse order.
 */
import { ApplicationFailure, CancellationScope, ContinueAsNew, condition, isCancellation } from '@temporalio/workflow';
import type { ToolResult } from '../../activities';
import { durationMs } from '../../plan-format/duration';
import { evaluateCondition } from '../../plan-format/expressions';
import { resolveTemplates } from '../../plan-format/templates';
import type { CompiledStep } from '../../plan-format/types';
import { type StartInput, checkedStart, isPrepared, preparedStart } from './start-input';
import { isoAt, nowMs } from '../common/clock';
import type { PlanResult, StepRecord, StepStatus } from '../../protocol/definitions';
import { describeFailure, messageOf } from '../common/failures';
import { decide } from './failure-decisions';
import { DEFAULT_STEP_TIMEOUT } from './step-options';
import { storedValues } from './tool-call';
import { WorkspaceMoved } from './workspace-host';
import { PlanRunState } from './run-state';
import { MAX_RESULT_BYTES, fitForFailure } from './result-size';
import { kindOf } from './kinds';
import { sizeOf } from '../common/sizes';
import type { OwnEvent } from '../common/run-stream';
import { PATCH_CONTINUE_AS_NEW, PATCH_RUN_STREAM } from '../../protocol/patches';
import { budgetSpent, continueRunAsNew } from './continue-as-new';

/** A running step: its record, how it ends, and its timeout (an extension lengthens it). */
interface BegunStep {
  record: StepRecord;
  end: (status: StepStatus, note?: string) => void;
  timeout: string | undefined;
}

function stepEnded(step: string, status: StepStatus, error: string | undefined, note: string | undefined): OwnEvent {
  if (status === 'failed') return { type: 'step_failed', step, error: error ?? note ?? 'failed' };
  return { type: 'step_completed', step, status: status === 'completed' || status === 'skipped' ? status : 'cancelled', ...(note && { note }) };
}

export async function runPlan(input: StartInput): Promise<PlanResult> {
  const start = isPrepared(input) ? await preparedStart(input) : checkedStart(input);
  let run: PlanRun;
  try {
    run = new PlanRun(start);
  } catch (err) {
    // Input no validator checked (a hand-made start): end the run, do not fail its tasks forever.
    throw ApplicationFailure.create({ type: 'PlanFailed', message: `the plan cannot run: ${messageOf(err)}`, nonRetryable: true });
  }
  return run.run();
}

class PlanRun extends PlanRunState {
  private readonly drainsStream = this.patches.has(PATCH_RUN_STREAM);
  /** Runs past their budget continue as new once no step runs (patch plan-continue-as-new). */
  private readonly mayContinue = this.patches.has(PATCH_CONTINUE_AS_NEW);
  /** Past its budget: no new step starts until the run continues as new; and once it could not, it goes on here. */
  private draining = false;
  private cannotContinue = false;
  private continuing = false;
  /** Lean runs (run-state.ts): the scheduler's scope and running steps, for the pass a settling step makes; and the version that pass saw. */
  private steps?: { scope: CancellationScope; running: Map<string, Promise<void>> };
  private passed = -1;

  async run(): Promise<PlanResult> {
    try {
      if (this.bindsHost && !(this.plan.source ? this.host.clone : this.host.host) && !(await this.boundToHost())) throw this.planFailed();
      return await this.runSteps();
    } catch (err) {
      if (!this.hardened || isCancellation(err) || err instanceof ApplicationFailure || err instanceof ContinueAsNew) throw err;
      // A fault in cadre's own workflow code: end the run with it rather than retry the task forever.
      this.abortReason ??= `cadre internal error: ${messageOf(err)}`;
      this.finish('failed');
      throw this.planFailed();
    } finally {
      // Every way a run ends (completed, aborted, cancelled, an internal error) is recorded once.
      if (this.finalStatus) await CancellationScope.nonCancellable(() => this.recordAnalytics());
      // Readers' long polls return with the last events, rather than find the run gone (a run continuing as new let them go already).
      if (this.drainsStream && !this.continuing) await CancellationScope.nonCancellable(() => this.stream.drain());
    }
  }

  private async runSteps(): Promise<PlanResult> {
    const root = CancellationScope.current();
    const stepsScope = new CancellationScope();
    const running = new Map<string, Promise<void>>();
    try {
      this.publishStatus();
      void this.budget?.watchTime();
      // Patched runs schedule inside the steps' scope, so a step starts with a plain call, not a
      // scope of its own (fewer promises a step: each one a workflow makes costs, the SDK records its stack).
      if (this.hardened) await stepsScope.run(() => this.scheduleAll(stepsScope, running));
      else await this.schedule(stepsScope, running);
    } catch (err) {
      if (!isCancellation(err)) throw err;
      // An abort cancels the steps' scope, and in patched runs the scheduler's wait with it: on to the abort below.
      if (this.abortReason && !root.consideredCancelled) return this.aborted(running);
      // Temporal cancellation (`cadre cancel`, `temporal workflow cancel`): clean up, then end as cancelled.
      await CancellationScope.nonCancellable(async () => {
        await Promise.allSettled(running.values());
        this.markUnfinished('run cancelled');
        await this.compensations.run();
        if (this.worktrees.size > 0) await this.worktrees.release('cancelled');
      });
      this.finish('cancelled');
      throw err;
    }
    if (this.abortReason) return this.aborted(running);
    // Runs without worktrees make no call and no await here: their commands stay as they were recorded.
    if (this.worktrees.size > 0) await this.worktrees.release('completed');
    if (this.plan.source) await this.host.removeClone();
    return this.complete();
  }

  /** The steps, in as many runs as the run's budget takes: past it, once no step runs, it continues as new. */
  private async scheduleAll(stepsScope: CancellationScope, running: Map<string, Promise<void>>): Promise<void> {
    for (;;) {
      await this.schedule(stepsScope, running);
      if (!this.draining || this.abortReason !== undefined || this.book.allEnded) return;
      await this.continueAsNew();
      // It could not (a plan too big to carry): the run goes on here, to Temporal's limits.
      this.draining = false;
      this.cannotContinue = true;
    }
  }

  /** Whether the run should stop starting steps and continue as new: steps are left, and its budget is spent (continue-as-new.ts). */
  private budgetSpent(): boolean {
    return this.mayContinue && !this.cannotContinue && this.abortReason === undefined && !this.book.allEnded && budgetSpent(this.limits, this.status() === 'waiting');
  }

  /** Continues as new (continue-as-new.ts); returns only when the run cannot be carried. */
  private async continueAsNew(): Promise<void> {
    const run = { input: this.input, plan: this.plan, stream: this.stream, host: this.host, ...(this.team && { team: this.team }) };
    const carried = await continueRunAsNew(run, () => this.carry(), () => (this.continuing = true));
    if (!carried) this.errors.push({ step: '(run)', message: "past its history or signal budget, the run could not continue as new (what its steps need is too big to carry): it goes on toward Temporal's limits" });
  }

  /** Starts steps as they become ready, until none runs and none can start (or an abort stops it, or the budget). */
  private async schedule(stepsScope: CancellationScope, running: Map<string, Promise<void>>): Promise<void> {
    if (this.lean) this.steps = { scope: stepsScope, running };
    const ended = () => running.size === 0 && (this.abortReason !== undefined || this.book.allEnded || this.draining);
    for (;;) {
      this.pass(stepsScope, running);
      if (ended()) return;
      const seen = this.version;
      // Lean runs: a step's end has made its pass already (settle), so only other changes, or the end, wake this.
      await condition(this.lean ? () => this.version !== this.passed || ended() : () => this.version !== seen);
    }
  }

  /** One look at the run: ready steps started, the status published, running steps cancelled on an abort. */
  private pass(stepsScope: CancellationScope, running: Map<string, Promise<void>>): void {
    if (!this.draining && this.budgetSpent()) this.draining = true;
    if (!this.paused && !this.abortReason && !this.draining) {
      for (const id of this.book.takeReady()) this.start(this.book.step(id), stepsScope, running);
    }
    this.publishStatus();
    if (this.abortReason && running.size > 0) stepsScope.cancel();
    this.passed = this.version;
  }

  /** Waits for the cancelled steps, runs compensations, and fails the run with the abort's reason. */
  private async aborted(running: Map<string, Promise<void>>): Promise<never> {
    await Promise.allSettled(running.values());
    this.markUnfinished('plan aborted');
    await CancellationScope.nonCancellable(() => this.compensations.run());
    if (this.worktrees.size > 0) await CancellationScope.nonCancellable(() => this.worktrees.release('failed'));
    this.finish(this.abortedByBudget ? 'budget_exhausted' : 'failed');
    throw this.planFailed();
  }

  /** Starts a step in the steps' cancellation scope; its promise settles when the step is done. */
  private start(step: CompiledStep, scope: CancellationScope, running: Map<string, Promise<void>>): void {
    const settled = () => this.settle(running, step.id);
    const faulted = (err: unknown) => {
      // executeStep handles every step failure; what reaches here is a fault in cadre itself.
      const internal = !isCancellation(err);
      if (internal && this.hardened) this.abortReason ??= `cadre internal error in step "${step.id}": ${messageOf(err)}`;
      settled();
      if (internal && !this.hardened) throw err;
    };
    const quick = this.lean ? this.quickStep(step, settled, faulted) : undefined;
    if (quick) {
      running.set(step.id, quick);
      return;
    }
    // Patched runs schedule inside that scope already: the step's call inherits it.
    const done = this.hardened ? this.executeStep(step) : scope.run(() => this.executeStep(step));
    // Settled after the step's promise, never inside it: a step can end without awaiting (a false
    // `when`), before `running` holds it.
    running.set(step.id, done.then(settled, faulted));
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
      type: this.abortedByBudget ? 'BudgetExhausted' : 'PlanFailed',
      message: this.abortReason ?? 'the plan failed',
      nonRetryable: true,
      details: [fitForFailure(this.diagnostics(), this.hardened)],
    });
  }

  private settle(running: Map<string, Promise<void>>, id: string): void {
    running.delete(id);
    this.changed();
    if (this.steps) this.pass(this.steps.scope, this.steps.running);
  }

  /** One step, with its failures decided (retry, extend, skip, abort) until it ends. */
  private executeStep(step: CompiledStep): Promise<void> {
    let begun: BegunStep;
    try {
      begun = this.begin(step);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.attempts(step, begun);
  }

  /**
   * Lean runs: a step without `when` or forEach, the common one, is its action's promise and one
   * handler that ends and settles it, no promise of its own (each one a workflow makes costs: the
   * SDK records its stack). A failure, thrown at once or later, goes on as any step's does.
   */
  private quickStep(step: CompiledStep, settled: () => void, faulted: (err: unknown) => void): Promise<void> | undefined {
    if (step.when !== undefined || step.forEach !== undefined) return undefined;
    let begun: BegunStep;
    try {
      begun = this.begin(step);
    } catch (err) {
      // As executeStep does: a fault of cadre's aborts the run, never escapes into the workflow task.
      return Promise.reject(err).then(undefined, faulted);
    }
    const slow = (error: unknown) => this.attempts(step, begun, { error }).then(settled, faulted);
    let action: Promise<ToolResult>;
    try {
      const run = () => this.runAction(step, this.scope(), begun.timeout, step.id);
      action = this.plan.source ? this.host.work(step.id, run, () => this.worktrees.ofClone(step.worktree)) : this.worktrees.afterStep(step, begun.record, run());
    } catch (error) {
      return slow(error);
    }
    return action.then((result) => {
      try {
        this.completed(step, begun, this.counted(step, result));
      } catch (err) {
        return faulted(err);
      }
      settled();
    }, slow);
  }

  /** The step is running: its record, its stream event, and how it ends. */
  private begin(step: CompiledStep): BegunStep {
    const record = this.record(step.id);
    const started = nowMs();
    this.book.setStatus(step.id, 'running');
    record.startedAt = isoAt(started);
    this.changed();
    this.stream.publish({ type: 'step_started', step: step.id, kind: step.action.kind });
    const end = (status: StepStatus, note?: string) => {
      record.endedAt = isoAt(nowMs());
      record.durationMs = nowMs() - started;
      if (note) record.note = note;
      this.book.setStatus(step.id, status);
      this.changed();
      this.stream.publish(stepEnded(step.id, status, record.error, note));
    };
    // People and agents may take a day: their kinds wait without limit unless the step sets a timeout.
    return { record, end, timeout: step.timeout ?? (kindOf(step.action).unbounded ? undefined : DEFAULT_STEP_TIMEOUT) };
  }

  private completed(step: CompiledStep, { record, end }: BegunStep, output: unknown): void {
    this.book.scope[step.id].output = output;
    this.compensations.completed(step.id);
    delete record.error;
    end('completed');
  }

  /** Runs the step until it ends; `first` is a failure of an attempt already made (lean runs). */
  private async attempts(step: CompiledStep, begun: BegunStep, first?: { error: unknown }): Promise<void> {
    const { record, end } = begun;
    let extensions = 0;
    const itemResults = new Map<number, unknown>();
    for (;;) {
      try {
        if (first) {
          const { error } = first;
          first = undefined;
          throw error;
        }
        if (step.when !== undefined) {
          const holds = this.conditionHolds(step.when);
          // No await unless an activity decides: an await, even of a boolean, would reorder commands.
          if (!(typeof holds === 'boolean' ? holds : await holds)) {
            end('skipped', `when "${step.when}" was false`);
            return;
          }
        }
        const output = this.plan.source
          ? await this.host.work(step.id, () => this.stepOutput(step, begun, itemResults), () => this.worktrees.ofClone(step.worktree))
          : step.forEach !== undefined
            ? await this.worktrees.afterStep(step, record, this.loops.run(step, begun.timeout, itemResults))
            : this.counted(step, await this.worktrees.afterStep(step, record, this.runAction(step, this.scope(), begun.timeout, step.id)));
        this.completed(step, begun, output);
        return;
      } catch (err) {
        if (err instanceof WorkspaceMoved) {
          // Its host went before its work was pushed: it runs again, from the last push, where the run moved.
          await this.host.moved();
          itemResults.clear();
          record.note = `ran again on host ${this.host.host?.host ?? '?'}: ${err.message}`;
          this.changed();
          continue;
        }
        if (isCancellation(err)) {
          end('cancelled', this.abortReason ? 'plan aborted' : 'run cancelled');
          throw err;
        }
        const failure = describeFailure(err);
        record.attempts += failure.attempts;
        record.error = failure.message;
        this.changed();
        const { decision, extendBy } = await decide(step, failure, extensions, this.abortReason, (...wait) => this.waitForHuman(...wait));
        if (decision === 'retry') continue;
        if (decision === 'extend') {
          extensions++;
          begun.timeout = extendBy ?? `${durationMs(begun.timeout ?? DEFAULT_STEP_TIMEOUT) * 2}ms`;
          continue;
        }
        this.errors.push({ step: step.id, message: failure.message });
        if (decision === 'skip') {
          end('skipped', `skipped after ${failure.timedOut ? 'timeout' : 'failure'}`);
          return;
        }
        end('failed');
        if (failure.type === 'BudgetExhausted' && this.abortReason === undefined) this.abortedByBudget = true;
        this.abortReason ??= `step "${step.id}" failed: ${failure.message}`;
        return;
      }
    }
  }

  /** A step's output: its items' for a forEach, else its action's. */
  private async stepOutput(step: CompiledStep, begun: BegunStep, itemResults: Map<number, unknown>): Promise<unknown> {
    return step.forEach !== undefined ? this.loops.run(step, begun.timeout, itemResults) : this.counted(step, await this.runAction(step, this.scope(), begun.timeout, step.id));
  }

  /**
   * A `when`, evaluated here, or by an activity when it reads a stored output. (Only that case
   * awaits: runs recorded before stored outputs must issue their commands in the same order.)
   */
  private conditionHolds(expression: string): boolean | Promise<boolean> {
    const scope = this.scope();
    if (!this.hardened || !this.names.readsStored(expression, scope)) return evaluateCondition(expression, scope);
    return storedValues(this.host.route).evaluateCondition({ expression, scope: this.names.subset(expression, scope), workspace: this.plan.workspace });
  }

  /** An action's output, its attempts added to the step's record. */
  counted(step: CompiledStep, result: ToolResult): unknown {
    this.record(step.id).attempts += result.attempt;
    return result.output;
  }

  /**
   * Runs the step's action once (with Temporal's retries for tools): its output and the attempts it
   * took. Not an async function, and the tool's own promise is returned as it is: every step takes
   * this path, and each promise a workflow makes costs (the SDK records its stack). Callers await it
   * inside try blocks.
   */
  runAction(step: CompiledStep, scope: Record<string, unknown>, timeout: string | undefined, label: string): Promise<ToolResult> {
    return kindOf(step.action).run(this, step, scope, timeout, label);
  }

}

