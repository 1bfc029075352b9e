/**
 * `agentTask`: one LLM agent, as a child workflow of a plan step (agent-loop.ts runs the loop).
 * It answers the `agentDiagnostics` query, takes approvals by the `answer` update (or from its plan
 * run by signal), tells its plan run what it waits for, streams its turns on a stream of its own
 * (agent-stream.ts), and shows its progress in the Web UI; a team worker also reports its state
 * (worker-reporter.ts) and is watched for silence (stuck-watch.ts).
 */
import type { SandboxSpec } from '../../sandbox/profile';
import {
  ApplicationFailure,
  CancellationScope,
  getExternalWorkflowHandle,
  isCancellation,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { ModelMessageInput } from '../../activities';
import { durationMs } from '../../plan-format/duration';
import { type AgentSpec, TEAM_MODEL_ATTEMPTS, TEAM_TOOL_HEARTBEAT_TIMEOUT } from '../../plan-format/types';
import { AgentLoop, type LoopHooks, asFailure } from './agent-loop';
import { isoAt, nowMs } from '../common/clock';
import { type AgentDiagnostics, type AgentSummary, type WorktreeRecord, agentAnswerSignal, agentDiagnosticsQuery, agentWaitsSignal, answerUpdate, hostMovedSignal } from '../../protocol/definitions';
import { agentForkSourceQuery } from '../../protocol/forks';
import type { AgentResult, AgentTaskInput, InheritedPolicy } from '../../protocol/agent-task';
import { type TeamWorkerContext, askQuestionTool, signalStateTool, silentTurnHandler, spawnSubtaskTool } from '../team/team-tools';
import { withinRole } from '../../roles/team-roles';
import { WorkerReporter } from './worker-reporter';
import { SentSignals } from '../common/sent-signals';
import { WorkerRecovery } from './recovery';
import { checkInput, count, listOf, map, oneOf, optional, shape, text } from '../../protocol/input-checks';
import { onSignal, onUpdate } from '../common/run-limits';
import { AgentStream } from './agent-stream';
import { StuckWatch } from './stuck-watch';
import { HostRoute } from '../common/host-route';
import { AGENT_BASELINES, PATCH_WAITS_DELIVERED, PATCH_WORKER_REPORTS, PATCH_WORKER_STATES } from '../../protocol/patches';
import { PatchBaselines } from '../patch-baselines';

const DECIDE_TURNS = 3;

const AGENT = shape({ prompt: text, tools: listOf(text), maxTurns: count, approvals: map, approvalTimeout: text });
const DECIDE = shape({ prompt: text, choices: listOf(text) });
const AGENT_TASK_INPUT = shape({
  step: text,
  action: shape({ kind: oneOf('agent', 'decide') }, (action, at) => (action.kind === 'agent' ? AGENT(action.agent, `${at}.agent`) : DECIDE(action.decide, `${at}.decide`))),
  prompt: text,
  workspace: text,
  resume: optional(shape({ turns: count, messages: listOf(map), turnStarts: listOf(count) })),
  runBudget: optional(shape({ owner: text })),
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
  private readonly telling = new SentSignals((err) => this.refused('agentWaits', err));
  /** Signals to its run that Temporal refused (the run took as many as it may): their names. */
  private readonly unheard = new Set<string>();
  /** Recoveries so far: the fallback model taken, servers restarted, people asked to fix something. */
  private readonly recovery: WorkerRecovery;
  /** Stuck detection: a team worker silent too long is reported blocked. */
  private readonly stuck: StuckWatch;
  /** Worktrees of subtasks started with `worktree: true`, and what became of them. */
  private readonly subtaskWorktrees: WorktreeRecord[] = [];
  /** The agent's own stream (its turns' text, tool calls and results), and its count of Temporal's limits. */
  private readonly stream: AgentStream;
  /** The fleet's host that holds its workspace, when its run is bound to one. */
  private readonly route?: HostRoute;
  /** Which patches it takes: agentTask's baselines (protocol/patches.ts). */
  private readonly patches: PatchBaselines;
  /** Its conversation: the prompt, then each turn's reply and tool results (a fork at a turn reads it). */
  private readonly messages: ModelMessageInput[];

  constructor(private readonly input: AgentTaskInput) {
    // First: a new run records its baseline's marker before any patch is asked.
    const patches = (this.patches = new PatchBaselines(AGENT_BASELINES));
    this.messages = [{ role: 'user', content: input.prompt }];
    this.stream = new AgentStream(input.step, input.ownStream === true, input.limits);
    if (input.hostQueue) this.route = new HostRoute({ taskQueue: input.hostQueue, ...(input.hostLostAfterMs !== undefined && { lostAfterMs: input.hostLostAfterMs }) }, () => this.waitsChanged());
    this.recovery = new WorkerRecovery(input, () => this.loop, () => this.reporter);
    const team = input.team && { runId: input.team.runId, step: input.step, ...(input.team.role !== undefined && { role: input.team.role }) };
    const reports = patches.has(PATCH_WORKER_STATES);
    this.reporter = new WorkerReporter(
      patches,
      reports,
      (moved) => {
        this.stuck.progressed();
        this.loop.record({ event: 'worker.state', state: moved.to });
        this.publish();
      },
      team,
      reports && patches.has(PATCH_WORKER_REPORTS),
      (err) => this.refused('workerMoves', err),
    );
    this.stuck = new StuckWatch(this.reporter, () => this.loop.runningTools(), patches, input.team?.runId);
    const { action } = input;
    const sandbox = this.sandbox();
    const common = {
      label: input.step,
      workspace: input.workspace,
      ...(input.worktree && { worktree: true }),
      ...(input.storeWorkspace && { storeWorkspace: input.storeWorkspace }),
      ...(this.route && { route: this.route }),
      ...(sandbox && { sandbox }),
      // Its turns stream to its own workflow, whose limits are its own: its plan run's go to the messages that control the run.
      stream: this.stream.target(),
      limits: this.stream.limits,
      ...(input.runBudget && { runBudget: input.runBudget }),
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
      patches,
    );
    setHandler(agentDiagnosticsQuery, () => this.diagnostics());
    setHandler(agentForkSourceQuery, () => ({ messages: this.messages, turnStarts: this.loop.turnStarts }));
    // Answers come straight to the agent (`cadre answer <agent id>`), or through its plan run.
    onUpdate(this.stream.limits, answerUpdate, ({ waitId, value }) => (this.loop.waits.accept(waitId, value), { accepted: true as const }), {
      validator: (answer) => this.loop.waits.validate(answer?.waitId, answer?.value),
    });
    // `cadre move`: its run gave up on its host (anyone can send signals: only a move from where it is applies).
    onSignal(this.stream.limits, hostMovedSignal, (moved) => {
      if (typeof moved?.to === 'string' && moved.from === this.route?.taskQueue) this.route.move(moved.to);
    });
    onSignal(this.stream.limits, agentAnswerSignal, (answer) => {
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
    const { resume } = this.input;
    if (resume) {
      // Forked at a turn: its first turns are the old agent's, as they were; the model goes on from there.
      this.messages.splice(0, this.messages.length, ...resume.messages);
      this.loop.turns = resume.turns;
      this.loop.turnStarts.push(...resume.turnStarts);
    }
    const watchdog = new CancellationScope();
    if (this.input.team) this.stuck.start(watchdog, durationMs(this.input.team.stuckAfter ?? '10s'));
    try {
      const output = await this.loop.respond(this.messages, undefined, resume?.turns);
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
      if (this.telling.size > 0 && this.patches.has(PATCH_WAITS_DELIVERED)) await this.telling.flush();
      await this.stream.end(this.status === 'completed' || this.status === 'failed' ? this.status : 'cancelled');
      await this.loop.lease?.settle();
    }
  }

  /** The run's sandbox with this agent's role narrowing it; its subtasks start from this one. */
  private sandbox(): SandboxSpec | undefined {
    const { action } = this.input;
    return withinRole(this.input.sandbox, action.kind === 'agent' ? action.agent.roleSandbox : undefined);
  }

  private hooks(): LoopHooks {
    const hooks: LoopHooks = {
      changed: () => this.publish(),
      waitsChanged: () => this.waitsChanged(),
      ...this.stream.hooks(),
    };
    const { team } = this.input;
    if (!team || this.input.action.kind !== 'agent') return hooks;
    hooks.progressed = () => this.stuck.progressed();
    hooks.reopened = (reason) => {
      if (this.reporter.state === 'completing') this.reporter.move('running', reason);
    };
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
      limits: this.stream.limits,
      refused: (signal, err) => this.refused(signal, err),
      ...(this.stream.own && { announce: (step: string, workflowId: string) => this.stream.announce(step, workflowId) }),
      childInput: () => ({ ...this.stream.childInput(), ...this.route?.childInput(), ...(this.input.runBudget && { runBudget: this.input.runBudget }) }),
      ...(this.route && { route: this.route }),
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
    const waiting = this.loop.waiting().length > 0;
    this.status = waiting ? 'waiting' : 'running';
    // A blocked worker that waits for a person stays blocked, so a search for blocked workers finds it.
    this.sync(waiting ? 'waiting for a person' : 'answered');
    this.publish();
    // Its run does not hear of its waits any more: its own stream says them.
    if (this.unheard.has('agentWaits')) this.stream.announceWaits(this.loop.waiting());
    const parent = workflowInfo().parent;
    if (!parent) return;
    // A parent that has ended cannot be told; the agent goes on either way.
    this.telling.track(getExternalWorkflowHandle(parent.workflowId, parent.runId).signal(agentWaitsSignal, { workflowId: workflowInfo().workflowId, waits: this.loop.waiting() }));
  }

  /** A signal to its run that Temporal refused: said in the audit log, the worker's log, its stream and the Web UI, never silent. */
  private refused(signal: string, err: ApplicationFailure): void {
    if (this.unheard.has(signal)) return;
    this.unheard.add(signal);
    this.loop.record({ event: 'signal.refused', signal, errorType: err.type ?? 'SignalCountLimitExceeded' });
    this.stream.refused(signal, err.message);
    if (signal === 'agentWaits') this.stream.announceWaits(this.loop.waiting());
    this.publish();
  }

  private summary(): AgentSummary {
    const budget = this.loop.ledger && { budget: this.loop.ledger.summary() };
    return { workflowId: workflowInfo().workflowId, turns: this.loop.turns, toolCalls: this.loop.toolCalls, usage: { ...this.loop.usage }, ...budget };
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
      limits: this.stream.limits.usage(),
    };
  }

  /** Where a person answers its waits: its run, or the agent itself when the run does not hear of them. */
  private answerTo(): string {
    return this.unheard.has('agentWaits') ? workflowInfo().workflowId : '<run>';
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
      ...loop.waiting().map((w) => `- waiting for approval \`${w.id}\`: \`cadre approve ${this.answerTo()} ${w.id}\` or \`cadre deny ${this.answerTo()} ${w.id} --reason ...\``),
      ...[...this.unheard].map((signal) => `- its run took no more signals (Temporal's limit a run): its \`${signal}\` did not reach it`),
    ];
    setCurrentDetails(lines.join('\n'));
  }
}
