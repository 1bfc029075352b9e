/**
 * A plan run's state and what clients see of it: the steps' records, waits, worktrees, agents,
 * its status, diagnostics and Web UI details, and what step kinds use of the run (PlanRunContext).
 * run-plan.ts schedules the steps on it.
 */
import type { SandboxSpec } from '../../sandbox/profile';
import { isCancellation, setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { ToolResult } from '../../activities';
import { BLOB_THRESHOLD_BYTES } from '../../plan-format/limits';
import { describeStored, hasDeferred, isStored } from '../../plan-format/refs';
import type { ResolveOptions } from '../../plan-format/templates';
import type { CompiledPlan, CompiledStep, ForkRestore, RunPlanInput } from '../../plan-format/types';
import { AgentSteps } from './agent-steps';
import { Team } from '../team/team';
import { isoAt, nowMs } from '../common/clock';
import { CadreStatus, type Diagnostics, type PlanEndStatus, type PlanStatus, type StepRecord, type WaitKind } from '../../protocol/definitions';
import type { ForkSource, ForkedFrom } from '../../protocol/forks';
import { DETAILS_ALL_STEPS_UP_TO, currentDetails } from '../../protocol/details';
import { StepFailedError, messageOf } from '../common/failures';
import { StepBook } from './step-book';
import { ActivityIds, storedValues } from './tool-call';
import { ExpressionNames } from '../../plan-format/stored-items';
import { HumanWaits } from './waits';
import { type ForEachHost, ForEachSteps } from './for-each';
import { type CompensationHost, Compensations } from './compensations';
import { type PlanHandlersHost, installPlanHandlers } from './handlers';
import { runEnded } from './metrics';
import { WorktreeLeases } from './worktrees';
import { recordFinishedRun, stepOutcomes } from './analytics';
import { RunStream } from '../common/run-stream';
import { RunLimits } from '../common/run-limits';
import { type ContinuedPlanInput, type PlanCarry, isContinued } from './continue-as-new';
import { carriedForkStarts, forkStarts, restoreFork } from './fork-start';
import { PATCH_AGENT_STREAMS, PATCH_HARDENED, PATCH_LEAN_STEPS, PATCH_STATUS_AS_STARTED, PATCH_STEP_ACTIVITY_IDS, PATCH_WORKSPACE_HOSTS } from '../../protocol/patches';
import { PlanPatches } from './plan-patches';
import { WorkspaceHostBinding } from './workspace-host';
import { type RunBudget, runBudget } from './run-budget';
import { describeRunSpend } from '../../protocol/budget';

const MAX_SIGNAL_ERRORS = 50;

export abstract class PlanRunState implements ForEachHost, CompensationHost, PlanHandlersHost {
  /** First: a new run records its patch baseline before anything asks for a patch. */
  readonly patches = new PlanPatches();
  readonly plan: CompiledPlan;
  protected readonly book: StepBook;
  readonly waits: HumanWaits;
  readonly hardened: boolean;
  /** Steps' successors start as they settle, and only process tools get an audit handler (patch lean-steps). */
  readonly lean: boolean;
  readonly templates: ResolveOptions;
  protected readonly names = new ExpressionNames();
  /** forEach steps, and their long loops kept across re-runs of a step. */
  readonly loops = new ForEachSteps(this);
  protected readonly errors: { step: string; message: string }[] = [];
  protected signalErrors = 0;
  protected readonly compensations = new Compensations(this);
  protected startedAtMs = nowMs();
  /** Runs of this plan run before this one (it continues as new past its budget: continue-as-new.ts). */
  protected readonly runsBefore: number;
  /** A fork: the run and step it was forked from (fork-start.ts). */
  private readonly forkedFrom?: ForkedFrom;
  protected endedAtMs?: number;
  paused = false;
  protected finalStatus?: PlanEndStatus;
  protected abortReason?: string;
  protected abortedByBudget = false; // a budget stopped the step the run aborted on: it ends budget_exhausted
  /** The `CadreStatus` the run shows: what it started with (patch status-as-started), then what it upserted. */
  protected publishedStatus?: string;
  protected output?: unknown;
  /** Activity ids named after steps; runs recorded before that naming replay without (patch step-activity-ids). */
  readonly activityIds = new ActivityIds(() => this.patches.has(PATCH_STEP_ACTIVITY_IDS));
  /** Bumped on every change the scheduler must look at. */
  protected version = 0;
  /** Git worktrees the steps work in (steps with `worktree`). */
  readonly worktrees: WorktreeLeases;
  /** Agent and decide steps' child workflows, and what they wait for. */
  readonly agents: AgentSteps;
  /** A plan with a `team` section: its agents are workers that ask the team before a person. */
  readonly team?: Team;
  /** Agents stream their turns on their own workflows, and the run's stream says where (patch agent-streams). */
  readonly agentStreams = this.patches.has(PATCH_AGENT_STREAMS);
  /** The host the workspace is bound to in a fleet (workspace-host.ts); runs recorded before replay unbound. */
  readonly host = new WorkspaceHostBinding(
    () => {
      this.changed();
      this.publishStatus();
    },
    // A workspace cloned from a repository is a folder of the host that cloned it: later steps run there, as do its worktrees.
    (workspace) => {
      this.plan.workspace = workspace;
      this.worktrees.hostMoved();
    },
  );
  protected readonly bindsHost = this.patches.has(PATCH_WORKSPACE_HOSTS);
  /** The run's use of Temporal's per-run limits: its handlers count what they take. */
  readonly limits: RunLimits;
  /** The run's stream: its steps, waits and end, and where each of its agents streams its turns. */
  readonly stream: RunStream;
  /** A plan's budget: one ledger all its agents lease from (run-budget.ts). */
  readonly budget?: RunBudget;

  constructor(protected readonly input: RunPlanInput | ContinuedPlanInput) {
    const carry = isContinued(input) ? input.continued : undefined;
    this.limits = new RunLimits(input.limits, (warning) => {
      // What the run's stream holds is part of what it replays: runs recorded before did not say this.
      if (this.agentStreams) this.stream.publish({ type: 'limits_warning', ...warning });
    });
    this.stream = new RunStream(carry?.stream, this.limits, carry?.streamFollowed === true);
    this.runsBefore = carry?.runs ?? 0;
    this.plan = input.plan;
    this.book = new StepBook(this.plan.steps);
    this.hardened = this.patches.has(PATCH_HARDENED);
    this.lean = this.patches.has(PATCH_LEAN_STEPS);
    if (this.patches.has(PATCH_STATUS_AS_STARTED)) this.publishedStatus = workflowInfo().typedSearchAttributes.get(CadreStatus);
    this.templates = { strict: this.hardened };
    this.waits = new HumanWaits(this.hardened, () => this.changed(), this.patches);
    this.worktrees = new WorktreeLeases(this.plan.name, () => this.changed(), () => this.host.route, () => this.plan.workspace);
    this.agents = new AgentSteps(
      this.patches,
      this.limits,
      this.agentStreams ? this.stream : undefined,
      (id, waiting) => this.agentWaiting(id, waiting),
      // Workers' states are read by queries only: a signal does not wake the scheduler.
      (worker) => this.team?.workerChanged(worker),
      () => this.host.route,
    );
    if (this.plan.team) {
      const track = (workflowId: string, step: string, role: string) => this.agents.track(workflowId, step, { role });
      this.team = new Team(this.plan.team, () => this.plan.workspace, this.plan.sandbox, track, () => this.changed(), this.limits, () => this.agents.childInput(), () => this.host.route);
    }
    // Spent, the budget stops the run: it ends budget_exhausted.
    this.budget = runBudget(this, carry?.budget, (reason) => ((this.abortReason ??= reason), (this.abortedByBudget = true)));
    installPlanHandlers(this);
    this.forkedFrom = carry?.forkedFrom ?? (input.forked && { run: input.forked.from, step: input.forked.step });
    if (this.forkedFrom) forkStarts(this, carry ? carry.forkStarts : input.forked);
    if (carry) this.restore(carry);
    else if (input.forked) restoreFork(this, this.book, input.forked as ForkRestore<StepRecord>);
  }

  /** What a fork of this run reads (`forkSource`): its plan, inputs, and every step's record and output. */
  forkSource(): ForkSource {
    const team = this.team && { workers: this.agents.workers(), teamAnswers: this.team.carried().answers };
    return { status: this.status(), plan: this.plan as unknown as ForkSource['plan'], inputs: this.input.inputs, ...this.book.carried(), ...team };
  }

  /** Everything the steps still to run need, for the run this one continues as (continue-as-new.ts). */
  protected carry(): PlanCarry {
    const { records, outputs } = this.book.carried();
    return {
      runs: this.runsBefore + 1,
      startedAtMs: this.startedAtMs,
      records,
      outputs,
      completed: this.compensations.carried(),
      errors: [...this.errors],
      signalErrors: this.signalErrors,
      paused: this.paused,
      activityIds: this.activityIds.carried(),
      worktrees: this.worktrees.carried(),
      ...(this.team && { team: this.team.carried() }),
      workers: this.agents.workers(),
      humanWaits: [...this.waits.ended],
      stream: this.stream.carried(),
      ...(this.stream.followed && { streamFollowed: true as const }),
      ...this.host.carried(this.plan.source !== undefined),
      ...(this.budget && { budget: this.budget.carry() }),
      ...(this.forkedFrom && { forkedFrom: this.forkedFrom, forkStarts: carriedForkStarts(this) }),
    };
  }

  private restore(carry: PlanCarry): void {
    this.startedAtMs = carry.startedAtMs;
    this.book.restore(carry.records, carry.outputs);
    this.compensations.restore(carry.completed);
    this.errors.push(...carry.errors);
    this.signalErrors = carry.signalErrors;
    this.setPaused(carry.paused);
    this.activityIds.restore(carry.activityIds);
    this.worktrees.restore(carry.worktrees);
    if (carry.team) this.team?.restore(carry.team);
    this.agents.restoreWorkers(carry.workers);
    this.waits.ended.push(...carry.humanWaits);
    this.host.restore(carry.host, this.plan.source && carry.clone && { source: this.plan.source, record: carry.clone });
    this.host.moves.push(...(carry.hostMoves ?? []));
  }

  signalError(name: string, waitId: unknown, err: unknown): void {
    // Anyone can send signals: a flood of bad ones must not grow the run's record without bound.
    if (++this.signalErrors > MAX_SIGNAL_ERRORS) return;
    const step = typeof waitId === 'string' && waitId.length <= 200 ? waitId : '(signal)';
    const more = this.signalErrors === MAX_SIGNAL_ERRORS ? ' (later signals that cannot apply are not recorded)' : '';
    this.errors.push({ step, message: `signal ${name} not applied: ${messageOf(err).slice(0, 500)}${more}` });
    this.changed();
  }

  setPaused(paused: boolean): { paused: boolean } {
    this.paused = paused;
    this.loops.setPaused(paused);
    this.changed();
    return { paused };
  }

  protected async recordAnalytics(): Promise<void> {
    await recordFinishedRun(this.patches, {
      plan: this.plan.name,
      status: this.finalStatus as PlanEndStatus,
      startedMs: this.startedAtMs,
      endedMs: this.endedAtMs ?? nowMs(),
      steps: stepOutcomes(this.plan.steps, (id) => this.record(id)),
      humanWaits: this.waits.ended,
    });
  }

  changed(): void {
    this.version++;
  }

  record(id: string): StepRecord {
    return this.book.record(id);
  }

  // ---- one step -------------------------------------------------------------

  /** An agent that starts or stops waiting for approval shows it as its step's status. */
  protected agentWaiting(id: string, waiting: boolean): void {
    // An agent that finds a clone's host gone moves the run, as a step of the run's own would.
    if (waiting && this.plan.source) for (const host of this.agents.hostsLost()) this.host.route?.lostElsewhere(host);
    const status = this.record(id).status;
    if (waiting && status === 'running') this.book.setStatus(id, 'waiting');
    else if (!waiting && status === 'waiting' && !this.waits.list().some((w) => w.id === id)) this.book.setStatus(id, 'running');
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
    return storedValues(this.host.route).resolveValue({ value, workspace: this.plan.workspace, inlineLimit });
  }

  // ---- humans ---------------------------------------------------------------

  async waitForHuman(id: string, kind: WaitKind, prompt: string, choices?: string[], timeout?: string): Promise<string | undefined> {
    const record = this.record(id);
    return this.waits.wait(
      { id, kind, prompt, ...(choices && { choices }), ...(timeout && { timeout }) },
      {
        opened: () => {
          this.book.setStatus(id, 'waiting');
          this.changed();
          this.publishStatus();
        },
        closed: () => {
          if (record.status === 'waiting') this.book.setStatus(id, 'running');
          this.changed();
          this.publishStatus();
        },
      },
    );
  }

  // ---- the end of a run -----------------------------------------------------

  protected markUnfinished(note: string): void {
    this.book.cancelUnfinished(note);
    this.waits.clear();
  }

  protected finish(status: PlanEndStatus): void {
    this.finalStatus = status;
    this.endedAtMs = nowMs();
    this.stream.publish({ type: 'run_completed', status, ...(status !== 'completed' && status !== 'cancelled' && this.abortReason && { error: this.abortReason }) });
    runEnded(this.plan.name, status, this.endedAtMs - this.startedAtMs);
    this.publishStatus();
  }

  // ---- what clients see -----------------------------------------------------

  get inputs(): Record<string, unknown> {
    return this.input.inputs;
  }

  step(id: string): CompiledStep {
    return this.book.step(id);
  }

  stepScope(id: string): unknown {
    return this.book.scope[id];
  }

  scope(): Record<string, unknown> {
    return { steps: this.book.scope, inputs: this.input.inputs };
  }

  protected status(): PlanStatus {
    if (this.finalStatus) return this.finalStatus;
    if (this.waits.size > 0 || this.agents.waiting > 0 || this.host.route?.waiting()) return 'waiting';
    return this.paused ? 'paused' : 'running';
  }

  /** Keeps the `CadreStatus` search attribute in step with the run, so lists can find runs waiting on a human. */
  publishStatus(): void {
    const status = this.status();
    this.stream.announceWaits(this.waitingList());
    const all = this.plan.steps.length <= DETAILS_ALL_STEPS_UP_TO;
    // Shown as "Current Details" in the Web UI: metadata read by a query, not history.
    setCurrentDetails(
      currentDetails({
        workflowId: workflowInfo().workflowId,
        status,
        total: this.plan.steps.length,
        counts: this.book.counts,
        steps: this.book.shown(all),
        waiting: this.waitingList(),
        ...(this.budget && { budget: describeRunSpend(this.budget.summary()) }),
      }),
    );
    if (status === this.publishedStatus) return;
    this.publishedStatus = status;
    upsertSearchAttributes([{ key: CadreStatus, value: status }]);
  }

  protected waitingList() {
    const host = this.host.route?.waiting();
    return [...this.waits.list(), ...(this.agents.waiting > 0 ? this.agents.list() : []), ...(host ? [host] : [])];
  }

  protected stepRecords(): StepRecord[] {
    return this.book.copies();
  }

  diagnostics(): Diagnostics {
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
      compensations: [...this.compensations.records],
      ...(this.output !== undefined && { output: this.output }),
      ...((this.finalStatus === 'failed' || this.finalStatus === 'budget_exhausted') && this.abortReason && { reason: this.abortReason }),
      ...(this.worktrees.size > 0 && { worktrees: this.worktrees.records() }),
      ...(this.host.host && { host: this.host.host.host }),
      ...(this.host.moves.length > 0 && { hostMoves: [...this.host.moves] }),
      ...(this.host.clone && { clone: this.host.clone }),
      ...(this.agents.workers().length > 0 && { workers: this.agents.workers() }),
      ...(this.team && this.team.records().length > 0 && { consultations: this.team.records() }),
      limits: this.limits.usage(),
      ...(this.budget && { budget: this.budget.summary() }),
      ...(this.runsBefore > 0 && { continuedAsNew: this.runsBefore }),
      ...(this.forkedFrom && { forkedFrom: this.forkedFrom }),
    };
  }

  /** Binds the workspace to the host that holds it (a fleet); false when none does, the run failed with why. */
  protected async boundToHost(): Promise<boolean> {
    try {
      if (this.plan.source) await this.host.bindClone(this.plan.source);
      else await this.host.bind(this.plan.workspace);
      return true;
    } catch (err) {
      if (isCancellation(err)) throw err;
      this.abortReason = messageOf(err);
      this.finish('failed');
      return false;
    }
  }

  /** Runs the step's action once: its output and the attempts it took (run-plan.ts). */
  abstract runAction(step: CompiledStep, scope: Record<string, unknown>, timeout: string | undefined, label: string): Promise<ToolResult>;
  /** An action's output, its attempts added to the step's record. */
  abstract counted(step: CompiledStep, result: ToolResult): unknown;
}
