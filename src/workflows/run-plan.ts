/**
 * `runPlan`: runs a validated plan as a DAG. Every step starts as soon as the steps
 * it needs have finished; tools run as activities with the step's timeout and retry
 * policy; humans answer through the `answer` update; abort and cancellation run the
 * `compensate` actions of completed steps in reverse order.
 */
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
  type ActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { durationMs, isDuration } from '../spec/duration';
import { evaluateCondition } from '../spec/expressions';
import { resolveTemplates } from '../spec/templates';
import type { CompiledPlan, CompiledStep, RunPlanInput, ToolCall } from '../spec/types';
import { isoAt, nowMs } from './clock';
import {
  CadreStatus,
  FAILURE_CHOICES,
  TIMEOUT_CHOICES,
  answerUpdate,
  diagnosticsQuery,
  pauseUpdate,
  resumeUpdate,
  type CompensationRecord,
  type Diagnostics,
  type PlanResult,
  type PlanStatus,
  type StepRecord,
  type WaitKind,
  type Waiting,
} from './definitions';
import { currentDetails } from './details';
import { StepTimeout, describeFailure, type StepError } from './failures';

/** Used when neither the step nor the plan's defaults set a timeout. */
export const DEFAULT_STEP_TIMEOUT = '10m';
export const DEFAULT_MAX_ATTEMPTS = 3;
/** How long a silent worker may hold a tool before the server retries it elsewhere. */
export const HEARTBEAT_TIMEOUT_MS = 10_000;
const COMPENSATION_TIMEOUT = '5m';
const MAX_AUTO_EXTENSIONS = 3;
const PATCH_STEP_ACTIVITY_IDS = 'step-activity-ids';
/** forEach items run at once when the step does not say: keeps a long list far from Temporal's pending-activity limit. */
export const DEFAULT_FOREACH_CONCURRENCY = 10;
const TERMINAL = new Set(['completed', 'skipped', 'failed', 'cancelled']);

type Decision = 'retry' | 'skip' | 'abort' | 'extend';

export async function runPlan(input: RunPlanInput): Promise<PlanResult> {
  return new PlanRun(input).run();
}

class PlanRun {
  private readonly plan: CompiledPlan;
  private readonly records = new Map<string, StepRecord>();
  private readonly outputs = new Map<string, unknown>();
  private readonly waiting = new Map<string, Waiting>();
  private readonly answers = new Map<string, string>();
  private readonly errors: { step: string; message: string }[] = [];
  private readonly compensations: CompensationRecord[] = [];
  private readonly completionOrder: string[] = [];
  private readonly startedAtMs = nowMs();
  private endedAtMs?: number;
  private paused = false;
  private finalStatus?: 'completed' | 'failed' | 'cancelled';
  private abortReason?: string;
  private publishedStatus?: PlanStatus;
  private output?: unknown;
  private readonly activityRuns = new Map<string, number>();
  /** Bumped on every change the scheduler must look at. */
  private version = 0;

  constructor(private readonly input: RunPlanInput) {
    this.plan = input.plan;
    for (const step of this.plan.steps) this.records.set(step.id, { id: step.id, status: 'pending', attempts: 0 });
    setHandler(diagnosticsQuery, () => this.diagnostics());
    setHandler(
      answerUpdate,
      ({ waitId, value }) => {
        this.answers.set(waitId, value);
        this.changed();
        return { accepted: true as const };
      },
      { validator: (answer) => this.validateAnswer(answer.waitId, answer.value) },
    );
    setHandler(pauseUpdate, () => {
      this.paused = true;
      this.changed();
      return { paused: true };
    });
    setHandler(resumeUpdate, () => {
      this.paused = false;
      this.changed();
      return { paused: false };
    });
  }

  async run(): Promise<PlanResult> {
    const stepsScope = new CancellationScope();
    const running = new Map<string, Promise<void>>();
    try {
      this.publishStatus();
      for (;;) {
        if (!this.paused && !this.abortReason) {
          for (const step of this.plan.steps) {
            if (this.record(step.id).status === 'pending' && this.ready(step)) {
              const done = stepsScope.run(() => this.executeStep(step));
              running.set(
                step.id,
                done.then(
                  () => this.settle(running, step.id),
                  (err) => {
                    this.settle(running, step.id);
                    // A bug in the scheduler, not a step failure: failing the workflow task (retried
                    // by Temporal) lets a fixed worker carry the run on instead of losing it.
                    if (!isCancellation(err)) throw err;
                  },
                ),
              );
            }
          }
        }
        this.publishStatus();
        if (this.abortReason && running.size > 0) stepsScope.cancel();
        if (running.size === 0 && (this.abortReason || this.allTerminal())) break;
        const seen = this.version;
        await condition(() => this.version !== seen);
      }
    } catch (err) {
      if (!isCancellation(err)) throw err;
      // Temporal cancellation (`cadre cancel`, `temporal workflow cancel`): clean up, then end as cancelled.
      await CancellationScope.nonCancellable(async () => {
        await Promise.allSettled(running.values());
        this.markUnfinished('run cancelled');
        await this.compensate();
      });
      this.finish('cancelled');
      throw err;
    }
    if (this.abortReason) {
      await Promise.allSettled(running.values());
      this.markUnfinished('plan aborted');
      await CancellationScope.nonCancellable(() => this.compensate());
      this.finish('failed');
      throw ApplicationFailure.create({
        type: 'PlanFailed',
        message: this.abortReason,
        nonRetryable: true,
        details: [this.diagnostics()],
      });
    }
    this.output = this.plan.output === undefined ? undefined : resolveTemplates(this.plan.output, this.scope());
    this.finish('completed');
    return this.diagnostics() as PlanResult;
  }

  private settle(running: Map<string, Promise<void>>, id: string): void {
    running.delete(id);
    this.changed();
  }

  private changed(): void {
    this.version++;
  }

  private record(id: string): StepRecord {
    return this.records.get(id) as StepRecord;
  }

  private ready(step: CompiledStep): boolean {
    return step.needs.every((dep) => {
      const status = this.record(dep).status;
      return status === 'completed' || status === 'skipped';
    });
  }

  private allTerminal(): boolean {
    return [...this.records.values()].every((r) => TERMINAL.has(r.status));
  }

  // ---- one step -------------------------------------------------------------

  private async executeStep(step: CompiledStep): Promise<void> {
    const record = this.record(step.id);
    const started = nowMs();
    record.status = 'running';
    record.startedAt = isoAt(started);
    this.changed();
    const end = (status: StepRecord['status'], note?: string) => {
      record.status = status;
      record.endedAt = isoAt(nowMs());
      record.durationMs = nowMs() - started;
      if (note) record.note = note;
      this.changed();
    };
    // A human may take a day: asks wait without limit unless the step sets a timeout.
    let timeout = step.timeout ?? (step.action.kind === 'ask' ? undefined : DEFAULT_STEP_TIMEOUT);
    let extensions = 0;
    const itemResults = new Map<number, unknown>();
    for (;;) {
      try {
        if (step.when !== undefined && !evaluateCondition(step.when, this.scope())) {
          end('skipped', `when "${step.when}" was false`);
          return;
        }
        const output =
          step.forEach !== undefined ? await this.runForEach(step, timeout, itemResults) : await this.runAction(step, this.scope(), timeout, step.id);
        this.outputs.set(step.id, output);
        this.completionOrder.push(step.id);
        delete record.error;
        end('completed');
        return;
      } catch (err) {
        if (isCancellation(err)) {
          this.waiting.delete(step.id);
          end('cancelled', this.abortReason ? 'plan aborted' : 'run cancelled');
          throw err;
        }
        const failure = err instanceof StepFailedError ? err.failure : describeFailure(err);
        record.attempts += failure.attempts;
        record.error = failure.message;
        this.changed();
        const decision = await this.decide(step, failure, extensions);
        if (decision === 'retry') continue;
        if (decision === 'extend') {
          extensions++;
          timeout = this.answeredDuration(step.id) ?? `${durationMs(timeout ?? DEFAULT_STEP_TIMEOUT) * 2}ms`;
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
      } finally {
        this.answers.delete(step.id);
      }
    }
  }

  /** What to do about a failed or timed-out step, by the plan's strategy or a human's answer. */
  private async decide(step: CompiledStep, failure: StepError, extensions: number): Promise<Decision> {
    if (this.abortReason) return 'abort';
    const strategy = failure.timedOut ? step.onTimeout : step.onFailure;
    if (strategy === 'extend') return extensions < MAX_AUTO_EXTENSIONS ? 'extend' : 'abort';
    // With `onFailure: retry` the activity already retried without limit; what reaches here is permanent.
    if (strategy === 'retry') return 'abort';
    if (strategy !== 'ask') return strategy;
    const kind: WaitKind = failure.timedOut ? 'timeout' : 'failure';
    const choices = failure.timedOut ? TIMEOUT_CHOICES : FAILURE_CHOICES;
    const prompt = `Step "${step.id}" ${failure.timedOut ? 'timed out' : 'failed'}: ${failure.message}. ${choices.join(', ')}?`;
    const answer = await this.waitForHuman(step.id, kind, prompt, choices);
    return (answer?.split(':')[0] as Decision | undefined) ?? 'abort';
  }

  private answeredDuration(id: string): string | undefined {
    const answer = this.answers.get(id);
    const [, extra] = answer?.split(':') ?? [];
    return extra ? extra.trim() : undefined;
  }

  private async runForEach(step: CompiledStep, timeout: string | undefined, results: Map<number, unknown>): Promise<unknown[]> {
    const items = resolveTemplates(step.forEach, this.scope());
    if (!Array.isArray(items)) {
      throw new StepFailedError({ message: `forEach did not give a list (got ${typeof items})`, timedOut: false, attempts: 0 });
    }
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
          const scope = { ...this.scope(), [step.as]: items[index], index };
          results.set(index, await this.runAction(step, scope, timeout, `${step.id}[${index}]`));
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
    return items.map((_, i) => results.get(i));
  }

  /** Runs the step's action once (with Temporal's retries for tools) and returns its output. */
  private async runAction(step: CompiledStep, scope: Record<string, unknown>, timeout: string | undefined, label: string): Promise<unknown> {
    const action = step.action;
    if (action.kind === 'ask') {
      const question = String(resolveTemplates(action.ask.question, scope));
      this.record(step.id).attempts += 1;
      const answer = await this.waitForHuman(step.id, 'ask', question, action.ask.choices, timeout);
      if (answer === undefined) throw new StepTimeout(`no answer within ${timeout}`);
      return answer;
    }
    timeout ??= DEFAULT_STEP_TIMEOUT;
    const params = resolveTemplates(action.with, scope) as Record<string, unknown>;
    if (action.tool === 'sleep') return this.durableSleep(step, params, timeout);
    const result = await this.tool(step, timeout, label).runTool({
      tool: action.tool,
      params,
      workspace: this.plan.workspace,
      stepId: step.id,
    });
    this.record(step.id).attempts += result.attempt;
    return result.output;
  }

  /** `sleep` is a durable timer, not an activity: it survives worker restarts for free. */
  private async durableSleep(step: CompiledStep, params: Record<string, unknown>, timeout: string): Promise<unknown> {
    const wanted = durationMs(String(params.duration));
    const limit = durationMs(timeout);
    this.record(step.id).attempts += 1;
    if (wanted > limit) {
      await sleep(limit, { summary: step.id });
      throw new StepTimeout(`sleep of ${String(params.duration)} ran past the ${timeout} timeout`);
    }
    await sleep(wanted, { summary: step.id });
    return { slept: params.duration };
  }

  private tool(step: CompiledStep, timeout: string, summary: string) {
    const retry = step.retry;
    const timeoutMs = durationMs(timeout);
    const options: ActivityOptions = {
      ...this.activityId(summary),
      scheduleToCloseTimeout: timeoutMs,
      heartbeatTimeout: Math.min(HEARTBEAT_TIMEOUT_MS, timeoutMs),
      summary,
      retry: {
        maximumAttempts: step.onFailure === 'retry' ? 0 : (retry.maximumAttempts ?? DEFAULT_MAX_ATTEMPTS),
        initialInterval: durationMs(retry.initialInterval ?? '1s'),
        backoffCoefficient: retry.backoffCoefficient ?? 2,
        ...(retry.maximumInterval && { maximumInterval: durationMs(retry.maximumInterval) }),
        ...(retry.nonRetryableErrorTypes && { nonRetryableErrorTypes: retry.nonRetryableErrorTypes }),
      },
    };
    return proxyActivities<Activities>(options);
  }

  // ---- humans ---------------------------------------------------------------

  private async waitForHuman(id: string, kind: WaitKind, prompt: string, choices?: string[], timeout?: string): Promise<string | undefined> {
    this.answers.delete(id);
    this.waiting.set(id, { id, kind, prompt, ...(choices && { choices }), since: isoAt(nowMs()) });
    const record = this.record(id);
    record.status = 'waiting';
    this.changed();
    this.publishStatus();
    try {
      const answered = timeout
        ? await condition(() => this.answers.has(id), durationMs(timeout), { summary: `${id}: waiting for a human` })
        : (await condition(() => this.answers.has(id)), true);
      return answered ? this.answers.get(id) : undefined;
    } finally {
      this.waiting.delete(id);
      if (record.status === 'waiting') record.status = 'running';
      this.changed();
      this.publishStatus();
    }
  }

  private validateAnswer(waitId: string, value: string): void {
    const waiting = this.waiting.get(waitId);
    if (!waiting) {
      const open = [...this.waiting.keys()];
      throw new Error(`nothing waits for "${waitId}"${open.length ? ` (waiting: ${open.join(', ')})` : ' (nothing is waiting)'}`);
    }
    if (typeof value !== 'string' || value.length === 0) throw new Error('the answer must be a non-empty string');
    if (!waiting.choices) return;
    const [choice, extra] = value.split(':');
    if (!waiting.choices.includes(waiting.kind === 'ask' ? value : choice)) {
      throw new Error(`"${value}" is not one of: ${waiting.choices.join(', ')}`);
    }
    if (waiting.kind !== 'ask' && extra !== undefined && (choice !== 'extend' || !isDuration(extra))) {
      throw new Error(`"${value}": only extend takes a duration, as in extend:10m`);
    }
  }

  // ---- the end of a run -----------------------------------------------------

  private markUnfinished(note: string): void {
    for (const record of this.records.values()) {
      if (!TERMINAL.has(record.status)) {
        record.status = 'cancelled';
        record.note = record.startedAt ? note : `not started: ${note}`;
      }
    }
    this.waiting.clear();
  }

  /** Runs the `compensate` actions of completed steps, most recent first; a failure is recorded, not fatal. */
  private async compensate(): Promise<void> {
    const completed = [...this.completionOrder].reverse();
    for (const id of completed) {
      const step = this.plan.steps.find((s) => s.id === id) as CompiledStep;
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
    const params = resolveTemplates(call.with, this.scope()) as Record<string, unknown>;
    if (call.tool === 'sleep') {
      await sleep(durationMs(String(params.duration)), { summary: `compensate ${step.id}` });
      return;
    }
    const activities = proxyActivities<Activities>({
      ...this.activityId(`compensate:${step.id}`),
      scheduleToCloseTimeout: COMPENSATION_TIMEOUT,
      heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
      summary: `compensate ${step.id}`,
      retry: { maximumAttempts: DEFAULT_MAX_ATTEMPTS },
    });
    await activities.runTool({ tool: call.tool, params, workspace: this.plan.workspace, stepId: step.id });
  }

  /**
   * Activity ids named after steps (`enrich[2]`, `archive#2` for a second run of a step), so the
   * Web UI and `describe` tell which step an activity belongs to. Runs recorded before this change
   * used Temporal's sequence numbers and must replay with them.
   */
  private activityId(label: string): { activityId?: string } {
    if (!patched(PATCH_STEP_ACTIVITY_IDS)) return {};
    const runs = (this.activityRuns.get(label) ?? 0) + 1;
    this.activityRuns.set(label, runs);
    return { activityId: runs === 1 ? label : `${label}#${runs}` };
  }

  private finish(status: 'completed' | 'failed' | 'cancelled'): void {
    this.finalStatus = status;
    this.endedAtMs = nowMs();
    this.publishStatus();
  }

  // ---- what clients see -----------------------------------------------------

  private scope(): Record<string, unknown> {
    const steps: Record<string, { output: unknown; status: string }> = {};
    for (const [id, record] of this.records) steps[id] = { output: this.outputs.get(id), status: record.status };
    return { steps, inputs: this.input.inputs };
  }

  private status(): PlanStatus {
    if (this.finalStatus) return this.finalStatus;
    if (this.waiting.size > 0) return 'waiting';
    return this.paused ? 'paused' : 'running';
  }

  /** Keeps the `CadreStatus` search attribute in step with the run, so lists can find runs waiting on a human. */
  private publishStatus(): void {
    const status = this.status();
    // Shown as "Current Details" in the Web UI: metadata read by a query, not history.
    setCurrentDetails(currentDetails(workflowInfo().workflowId, status, this.stepRecords(), [...this.waiting.values()]));
    if (status === this.publishedStatus) return;
    this.publishedStatus = status;
    upsertSearchAttributes([{ key: CadreStatus, value: status }]);
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
      waiting: [...this.waiting.values()],
      errors: [...this.errors],
      compensations: [...this.compensations],
      ...(this.output !== undefined && { output: this.output }),
    };
  }
}

/** A step failure found by workflow code itself (not an activity): no attempts to count. */
class StepFailedError extends Error {
  constructor(readonly failure: StepError) {
    super(failure.message);
  }
}
