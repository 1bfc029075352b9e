/**
 * `agentTask`: one LLM agent, as a child workflow of a plan step (agent-loop.ts runs the loop).
 * It answers the `agentDiagnostics` query, takes approvals by the `answer` update (or from its plan
 * run by signal), tells its plan run what it waits for, and shows its progress in the Web UI.
 */
import type { SandboxSpec } from '../../sandbox/profile';
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities, ModelMessageInput } from '../../activities';
import { durationMs } from '../../spec/duration';
import { type AgentSpec, TEAM_MODEL_ATTEMPTS, TEAM_TOOL_HEARTBEAT_TIMEOUT } from '../../spec/types';
import { AgentLoop, type LoopHooks, asFailure } from './agent-loop';
import { isoAt, nowMs } from '../common/clock';
import { type AgentDiagnostics, type AgentSummary, type WorktreeRecord, agentAnswerSignal, agentDiagnosticsQuery, agentWaitsSignal, answerUpdate } from '../../protocol/definitions';
import type { AgentResult, AgentTaskInput, InheritedPolicy } from './agent-task-contract';
import { type TeamWorkerContext, askQuestionTool, signalStateTool, silentTurnHandler, spawnSubtaskTool } from '../team/team-tools';
import { withinRole } from '../team/team-roles';
import { WorkerReporter } from './worker-reporter';
import { SentSignals } from '../common/sent-signals';
import { WorkerRecovery } from './recovery';
import { checkInput, count, listOf, map, oneOf, shape, text } from '../../protocol/input-checks';

/** Agents report their worker state (search attribute, signals to the team run); older histories did not. */
const PATCH_WORKER_STATES = 'worker-states';
const liveness = proxyLocalActivities<Activities>({ startToCloseTimeout: '10s', retry: { maximumAttempts: 2 } });
/** Team workers' stuck watch runs outside the workflow (activities/liveness.ts); older histories did not. */
const PATCH_STUCK_WATCH = 'stuck-watch';
/** An agent ends once its agentWaits signals are delivered (common/sent-signals.ts); older histories ended without waiting. */
const PATCH_WAITS_DELIVERED = 'agent-waits-delivered';
/**
 * The watch beats: a lost worker's watch is retried on a live one within 3 s. With no worker for
 * activities within 3 s more, the workflow's own timers watch instead (still before a silence of
 * the default 10 s is due). It returns each hour, to start afresh.
 */
const watcher = proxyActivities<Activities>({
  startToCloseTimeout: '70m',
  scheduleToStartTimeout: '3s',
  heartbeatTimeout: '3s',
  retry: { initialInterval: '100ms', maximumInterval: '5s', maximumAttempts: 20 },
  summary: 'stuck watch',
});

const DECIDE_TURNS = 3;

const AGENT = shape({ prompt: text, tools: listOf(text), maxTurns: count, approvals: map, approvalTimeout: text });
const DECIDE = shape({ prompt: text, choices: listOf(text) });
const AGENT_TASK_INPUT = shape({
  step: text,
  action: shape({ kind: oneOf('agent', 'decide') }, (action, at) => (action.kind === 'agent' ? AGENT(action.agent, `${at}.agent`) : DECIDE(action.decide, `${at}.decide`))),
  prompt: text,
  workspace: text,
});

export async function agentTask(input: AgentTaskInput): Promise<AgentResult> {
  checkInput('agentTask', input, AGENT_TASK_INPUT);
  return new AgentRun(input).run();
}

class AgentRun {
  private readonly loop: AgentLoop;
  private readonly startedAtMs = nowMs();
  private status: AgentDiagnostics['status'] = 'running';
  private readonly reporter: WorkerReporter;
  /** A team worker's questions and subtasks under way. */
  private readonly busy = { questions: 0, subtasks: 0 };
  /** `agentWaits` signals to the plan run not yet delivered (PATCH_WAITS_DELIVERED). */
  private readonly telling = new SentSignals();
  /** Recoveries so far: the fallback model taken, servers restarted, people asked to fix something. */
  private readonly recovery: WorkerRecovery;
  /** Stuck detection: when the worker last moved on, and whether it is blocked for want of progress. */
  private lastProgressMs = nowMs();
  private stuck = false;
  /** Worktrees of subtasks started with `worktree: true`, and what became of them. */
  private readonly subtaskWorktrees: WorktreeRecord[] = [];

  constructor(private readonly input: AgentTaskInput) {
    this.recovery = new WorkerRecovery(input, () => this.loop, () => this.reporter);
    const team = input.team && { runId: input.team.runId, step: input.step, ...(input.team.role !== undefined && { role: input.team.role }) };
    this.reporter = new WorkerReporter(
      patched(PATCH_WORKER_STATES),
      (moved) => {
        this.progressed();
        this.loop.record({ event: 'worker.state', state: moved.to });
        this.publish();
      },
      team,
    );
    const { action } = input;
    const sandbox = this.sandbox();
    const common = {
      label: input.step,
      workspace: input.workspace,
      ...(input.worktree && { worktree: true }),
      ...(input.storeWorkspace && { storeWorkspace: input.storeWorkspace }),
      ...(sandbox && { sandbox }),
      // Its turns stream to the run that started it all, so one reader follows every agent of a run.
      stream: { workflowId: workflowInfo().root?.workflowId ?? workflowInfo().workflowId },
    };
    this.loop = new AgentLoop(
      action.kind === 'agent'
        ? {
            ...common,
            ...(input.team && { modelAttempts: TEAM_MODEL_ATTEMPTS, toolHeartbeatTimeout: TEAM_TOOL_HEARTBEAT_TIMEOUT }),
            ...action.agent,
            ...(action.agent.system === undefined && action.agent.role && { system: `You are the ${action.agent.role} of the team.` }),
            ...(input.inherited && { tools: action.agent.tools.filter((t) => input.inherited?.tools.includes(t)), inheritedApprovals: input.inherited.approvals }),
          }
        : {
            ...common,
            ...(action.decide.model !== undefined && { model: action.decide.model }),
            system: `Decide. Answer with exactly one of these choices and nothing else: ${action.decide.choices.join(', ')}.`,
            tools: [],
            approvals: {},
            approvalTimeout: '1s',
            maxTurns: DECIDE_TURNS,
            choices: action.decide.choices,
          },
      this.hooks(),
    );
    setHandler(agentDiagnosticsQuery, () => this.diagnostics());
    // Answers come straight to the agent (`cadre answer <agent id>`), or through its plan run.
    setHandler(answerUpdate, ({ waitId, value }) => (this.loop.waits.accept(waitId, value), { accepted: true as const }), {
      validator: (answer) => this.loop.waits.validate(answer?.waitId, answer?.value),
    });
    setHandler(agentAnswerSignal, (answer) => {
      try {
        this.loop.waits.validate(answer?.waitId, answer?.value);
      } catch {
        return; // the plan run checked it; a late duplicate finds the wait closed (and anyone can send signals)
      }
      this.loop.waits.accept(answer.waitId, answer.value);
    });
  }

  async run(): Promise<AgentResult> {
    this.loop.record({ event: 'message.received', chars: this.input.prompt.length });
    this.reporter.move('running', 'started');
    const messages: ModelMessageInput[] = [{ role: 'user', content: this.input.prompt }];
    const watchdog = new CancellationScope();
    if (this.input.team) {
      const stuckMs = durationMs(this.input.team.stuckAfter ?? '10s');
      const outside = patched(PATCH_STUCK_WATCH);
      void watchdog.run(() => (outside ? this.watchFromOutside(stuckMs) : this.watch(stuckMs))).catch(() => undefined);
    }
    try {
      const output = await this.loop.respond(messages);
      if (this.reporter.state !== 'completing') this.reporter.move('completing', 'final answer');
      this.reporter.move('completed', 'done');
      this.status = 'completed';
      this.loop.record({ event: 'agent.finished', outcome: 'completed', turn: this.loop.turns });
      return { ...this.summary(), output };
    } catch (err) {
      if (isCancellation(err)) {
        this.reporter.tryMove('cancelled', 'cancelled');
        this.loop.record({ event: 'agent.finished', outcome: 'cancelled' });
        throw err;
      }
      this.status = 'failed';
      const failure = asFailure(err);
      if (this.reporter.state !== 'error') this.reporter.tryMove('error', failure.message);
      this.loop.record({ event: 'agent.finished', outcome: 'failed', errorType: failure.type ?? 'Error' });
      // The summary travels with the failure, so the plan's record shows what the agent used.
      throw ApplicationFailure.create({ type: failure.type ?? 'AgentFailed', message: failure.message, nonRetryable: failure.nonRetryable ?? false, details: [this.summary()] });
    } finally {
      watchdog.cancel();
      this.publish();
      await this.reporter.flush();
      if (this.telling.size > 0 && patched(PATCH_WAITS_DELIVERED)) await this.telling.flush();
    }
  }

  /**
   * Stuck detection: a running worker that has not moved on (no model turn back, no tool call
   * started or ended, no state change) for `stuckMs` asks the server when its running activities
   * last beat; silent for as long, it is reported blocked (state, search attribute, team run, audit
   * log) until it moves on again. A timer per `stuckMs` of quiet, not per event.
   */
  private async watch(stuckMs: number): Promise<void> {
    // The workflow clock lags after a workflow task moved to another worker (it reads the last
    // started task's time); a timer that fired proves its time has come, so time is at least that.
    let firedAt = 0;
    const now = () => Math.max(nowMs(), firedAt);
    const pause = async (ms: number) => {
      const until = now() + ms;
      await sleep(ms);
      firedAt = Math.max(firedAt, until);
    };
    for (;;) {
      const due = this.lastProgressMs + stuckMs - now();
      if (due > 0 || this.reporter.state !== 'running') {
        await pause(due > 0 ? due : stuckMs);
        continue;
      }
      const { latestMs } = await liveness.lastSignOfLife({ workflowId: workflowInfo().workflowId });
      if (latestMs !== undefined && latestMs + stuckMs > now()) {
        this.lastProgressMs = Math.max(this.lastProgressMs, latestMs);
        continue;
      }
      if (this.reporter.state !== 'running') continue;
      this.reportStuck(now() - Math.max(this.lastProgressMs, latestMs ?? 0));
      firedAt = await this.untilProgress(stuckMs, firedAt);
    }
  }

  /**
   * Stuck detection by an activity that watches the workflow's other activities (see
   * `watchForSilence`): no timer of the workflow's own runs while it watches, so nothing of this
   * workflow waits on a lost worker's sticky queue before the watch has sent it elsewhere.
   */
  private async watchFromOutside(stuckMs: number): Promise<void> {
    const team = this.input.team?.runId;
    for (;;) {
      let silence: Awaited<ReturnType<Activities['watchForSilence']>>;
      try {
        silence = await watcher.watchForSilence({ stuckMs, alsoReset: team ? [team] : [] });
      } catch (err) {
        if (isCancellation(err)) throw err;
        // No worker took the watch (activities run elsewhere, and none is up): the workflow's own timers watch.
        return this.watch(stuckMs);
      }
      if (silence === null) continue; // an hour's round ended
      const progress = this.lastProgressMs;
      // Silent is silent for the worker too: no move, model turn or tool call since either.
      const dueMs = Math.max(this.lastProgressMs, silence.sinceMs) + stuckMs;
      if (this.reporter.state !== 'running') {
        await condition(() => this.lastProgressMs !== progress);
      } else if (dueMs > nowMs()) {
        await condition(() => this.lastProgressMs !== progress, dueMs - nowMs());
      } else {
        this.reportStuck(nowMs() - Math.max(this.lastProgressMs, silence.sinceMs));
        await this.untilProgress(stuckMs, 0);
      }
    }
  }

  private reportStuck(silentMs: number): void {
    this.reporter.move('blocked', `no progress, heartbeat or state signal for ${Math.round(silentMs / 1000)} s${this.runningNote()}`);
    this.stuck = true;
  }

  /**
   * Blocked until the loop moves on, or its activities beat again (retried on another worker).
   * Returns the latest time a timer proved (see `watch`).
   */
  private async untilProgress(stuckMs: number, firedAt: number): Promise<number> {
    const now = () => Math.max(nowMs(), firedAt);
    for (let until = now() + stuckMs; !(await condition(() => !this.stuck, stuckMs)); until = now() + stuckMs) {
      firedAt = Math.max(firedAt, until);
      const again = await liveness.lastSignOfLife({ workflowId: workflowInfo().workflowId });
      if (again.latestMs !== undefined && again.latestMs + stuckMs > now()) this.progressed();
    }
    return firedAt;
  }

  /** The worker moved on: a stuck worker runs again. */
  private progressed(): void {
    this.lastProgressMs = nowMs();
    if (!this.stuck) return;
    this.stuck = false;
    if (this.reporter.state === 'blocked') this.reporter.move('running', 'progress again');
  }

  private runningNote(): string {
    const running = this.loop.runningTools();
    return running.length > 0 ? ` (running: ${running.join(', ')})` : '';
  }

  /** The run's sandbox with this agent's role narrowing it; its subtasks start from this one. */
  private sandbox(): SandboxSpec | undefined {
    const { action } = this.input;
    return withinRole(this.input.sandbox, action.kind === 'agent' ? action.agent.roleSandbox : undefined);
  }

  private hooks(): LoopHooks {
    const hooks: LoopHooks = { changed: () => this.publish(), waitsChanged: () => this.waitsChanged() };
    const { team } = this.input;
    if (!team || this.input.action.kind !== 'agent') return hooks;
    hooks.progressed = () => this.progressed();
    const sandbox = this.sandbox();
    const ctx: TeamWorkerContext = {
      team,
      reporter: this.reporter,
      label: this.input.step,
      workspace: this.input.workspace,
      ...(sandbox && { sandbox }),
      ...(this.input.action.kind === 'agent' && { policy: this.ownPolicy(this.input.action.agent) }),
      ...(this.input.worktree && this.input.branch !== undefined && { worktree: { branch: this.input.branch, storeWorkspace: this.input.storeWorkspace ?? this.input.workspace } }),
      subtaskWorktrees: this.subtaskWorktrees,
      busy: this.busy,
      sync: (reason) => this.sync(reason),
      askPerson: (id, prompt, timeout) =>
        this.loop.waits.wait({ id, kind: 'ask', prompt, ...(timeout !== undefined && { timeout }) }, { opened: () => this.waitsChanged(), closed: () => this.waitsChanged() }),
      askWhileBlocked: async (id, prompt, choices) => {
        const answer = await this.loop.waits.wait(
          { id, kind: 'ask', prompt, ...(choices && { choices }) },
          {
            opened: () => this.waitsChanged(),
            closed: () => {
              this.reporter.move('running', 'a person answered');
              this.waitsChanged();
            },
          },
        );
        return answer as string;
      },
    };
    return {
      ...hooks,
      workflowTools: [signalStateTool(ctx), askQuestionTool(ctx), spawnSubtaskTool(ctx)],
      silent: silentTurnHandler(ctx),
      recover: (err, where, tool) => this.recovery.recover(ctx, err, where, tool),
    };
  }

  /** A worker waits for input while a person or the team owes it an answer, for a subtask while one runs. */
  /** What this agent may do, for its subtasks to inherit: its tools (narrowed by its own parents) and every approvals above it. */
  private ownPolicy(agent: AgentSpec): InheritedPolicy {
    const inherited = this.input.inherited;
    return {
      tools: inherited ? agent.tools.filter((t) => inherited.tools.includes(t)) : agent.tools,
      approvals: [agent.approvals, ...(inherited?.approvals ?? [])],
    };
  }

  private sync(reason: string): void {
    const state = this.reporter.state;
    // blocked, completing and the final states change only by what the worker does.
    if (state !== 'running' && state !== 'waiting_for_input' && state !== 'waiting_for_subtask') return;
    const desired = this.loop.waits.size > 0 || this.busy.questions > 0 ? 'waiting_for_input' : this.busy.subtasks > 0 ? 'waiting_for_subtask' : 'running';
    if (desired === state) return;
    if (state !== 'running' && desired !== 'running') this.reporter.move('running', reason);
    this.reporter.move(desired, reason);
  }

  /** The plan run shows what its agents wait for, and passes answers on. */
  private waitsChanged(): void {
    const waiting = this.loop.waits.size > 0;
    this.status = waiting ? 'waiting' : 'running';
    // A blocked worker that waits for a person stays blocked, so a search for blocked workers finds it.
    this.sync(waiting ? 'waiting for a person' : 'answered');
    this.publish();
    const parent = workflowInfo().parent;
    if (!parent) return;
    // A parent that has ended cannot be told; the agent goes on either way.
    this.telling.track(getExternalWorkflowHandle(parent.workflowId, parent.runId).signal(agentWaitsSignal, { workflowId: workflowInfo().workflowId, waits: this.loop.waiting() }));
  }

  private summary(): AgentSummary {
    return { workflowId: workflowInfo().workflowId, turns: this.loop.turns, toolCalls: this.loop.toolCalls, usage: { ...this.loop.usage } };
  }

  private diagnostics(): AgentDiagnostics {
    return {
      step: this.input.step,
      kind: this.input.action.kind,
      status: this.status,
      turns: this.loop.turns,
      maxTurns: this.loop.maxTurns,
      toolCalls: this.loop.toolCalls,
      usage: { ...this.loop.usage },
      running: this.loop.runningTools(),
      waiting: this.loop.waiting(),
      startedAt: isoAt(this.startedAtMs),
      state: this.reporter.state,
      transitions: this.reporter.machine.transitions(),
      moves: this.reporter.machine.count,
      fingerprint: this.reporter.machine.fingerprint,
      ...(this.subtaskWorktrees.length > 0 && { worktrees: this.subtaskWorktrees.map((w) => ({ ...w })) }),
    };
  }

  /** The Web UI's Current Details: what the agent is doing, as a Markdown list (made at every move: only what it shows is read). */
  private publish(): void {
    const { loop } = this;
    const running = loop.runningTools();
    const lines = [
      `**${this.input.action.kind} ${this.input.step}**: ${this.reporter.state.replaceAll('_', ' ')}`,
      '',
      `- turn ${loop.turns} of at most ${loop.maxTurns}`,
      `- ${loop.toolCalls} tool calls${running.length ? `, running: ${running.join(', ')}` : ''}`,
      `- tokens: ${loop.usage.inputTokens} in, ${loop.usage.outputTokens} out`,
      ...loop.waiting().map((w) => `- waiting for approval \`${w.id}\`: \`cadre approve <run> ${w.id}\` or \`cadre deny <run> ${w.id} --reason ...\``),
    ];
    setCurrentDetails(lines.join('\n'));
  }
}
