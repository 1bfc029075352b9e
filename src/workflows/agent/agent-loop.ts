/**
 * The agent loop in workflow code: model turn → the tool calls of that turn, in parallel → their
 * results → the next turn, until a final answer, the turn limit or the token budget. Every model
 * turn and tool call is an activity, so a worker that dies mid-loop costs nothing already done.
 * Bad tool calls (unknown tool, invalid arguments, a tool's error, a denial) go back to the model
 * as tool results; only cadre's own limits, its turn guards (a call written as text twice, the
 * same calls four turns in a row: protocol/agent-guards.ts) and a failing model end a loop. Used
 * by `agentTask` (one answer) and `session` (one answer per message).
 */
import { ApplicationFailure, isCancellation } from '@temporalio/workflow';
import { PATCH_COMMAND_RULES, PATCH_CONVERSATION_CHAIN, PATCH_HISTORY_GUARD, PATCH_TURN_GUARDS } from '../../protocol/patches';
import type { Patches } from '../patch-baselines';
import { ApprovalGate } from './approval-gate';
import type { Activities, AgentTool, ChainedTurnResult, ModelMessageInput, ModelToolCall, ModelTurnResult } from '../../activities';
import { matchChoice } from '../../plan-format/approval-policy';
import { type GlobApprovalContext, globApproval } from './glob-approval';
import { audit, type AuditEvent } from './audit';
import { isoAt, nowMs } from '../common/clock';
import type { TokenUsage, Waiting } from '../../protocol/definitions';
import { describeFailure } from '../common/failures';
import { HumanWaits } from '../plan/waits';
import type { StreamTarget } from '../../protocol/stream';
import { TurnGuards } from '../../protocol/agent-guards';
import type { LoopHooks, LoopSpec, ToolMessage, WorkflowTool } from './loop-contract';
import { AGENT_INLINE_LIMIT, asFailure, modelActivities, toolActivities, toolReply, toolset } from './loop-activities';
import { TurnEvents } from '../../streaming/turn-events';
import { BudgetLedger } from './budget-ledger';
import { refusedTurn } from '../../budget/ledger';
import { BudgetLease } from './budget-lease';
import { turnBudget } from '../../budget/lease';
import type { HostRoute } from '../common/host-route';
import { VerifyGate } from './verify-gate';
import { StoredConversation } from '../../protocol/stored-conversation';
import type { ErrorTypes } from '../../errors/application-failures';

export type { LoopHooks, LoopSpec, ToolMessage, WorkflowTool } from './loop-contract';
export { AGENT_INLINE_LIMIT, asFailure } from './loop-activities';

type ToolOutcome = { message: ToolMessage; final?: { output: unknown } };
/** Past this share of its history limit an agent starts no model turn (the next one's input must still fit): patch asked only then. */
const HISTORY_STOP_SHARE = 0.85;
/** The chained turn's failure when the store cannot give the conversation back: the compiler holds it to the activity's. */
const CONVERSATION_MISSING: typeof ErrorTypes.ConversationMissing = 'ConversationMissing';

export class AgentLoop {
  readonly usage: TokenUsage = { inputTokens: 0, outputTokens: 0 };
  readonly waits: HumanWaits;
  turns = 0;
  toolCalls = 0;
  /** How many messages there were as each model turn began (agentTask's conversation): where a fork at a turn cuts it. */
  readonly turnStarts: number[] = [];
  /** Model turns for one answer. */
  readonly maxTurns: number;
  private readonly running = new Map<string, string>();
  private offered?: Promise<AgentTool[]>;
  private readonly models: ReturnType<typeof modelActivities>;
  /** The model after a recovery switched to a fallback. */
  private model?: string;
  /** Runs from before command rules decided with globs in the workflow, and must replay that way. */
  private readonly gate?: ApprovalGate;
  /** Runs from before the turn guards took any answer as an answer and let loops run to maxTurns. */
  private readonly guarded: boolean;
  /** What the loop publishes itself to its host's stream (turns' ends, tool results); absent, its activities publish all. */
  private readonly events?: TurnEvents;
  /** Its budget's ledger, when it has a budget. */
  readonly ledger?: BudgetLedger;
  /** Its lease on its plan's budget, when the plan has one. */
  readonly lease?: BudgetLease;
  /** Its step's check, run before a final answer is taken. */
  private readonly verify?: VerifyGate;
  /** Its conversation as stored by its model turns, when it has a workspace to store it in. */
  private readonly conversation?: StoredConversation;

  constructor(
    private readonly spec: LoopSpec,
    private readonly hooks: LoopHooks,
    /** Its workflow's patches: agentTask's or session's baselines. */
    private readonly patches: Patches,
  ) {
    this.waits = new HumanWaits(true, () => hooks.changed(), patches);
    this.maxTurns = spec.maxTurns;
    this.models = modelActivities(spec.modelAttempts, spec.route);
    this.model = spec.model;
    if (patches.has(PATCH_COMMAND_RULES)) {
      const gate = { label: spec.label, approvals: spec.approvals, approvalTimeout: spec.approvalTimeout, ...(spec.inheritedApprovals && { inherited: spec.inheritedApprovals }) };
      this.gate = new ApprovalGate(gate, this.waits, () => hooks.waitsChanged(), (event) => this.record(event));
    }
    this.guarded = patches.has(PATCH_TURN_GUARDS);
    if ((spec.storeWorkspace ?? spec.workspace) !== undefined && patches.has(PATCH_CONVERSATION_CHAIN)) this.conversation = new StoredConversation();
    if (hooks.publish) this.events = new TurnEvents(spec.label, hooks.publish);
    if (spec.budget) {
      const warn = (message: string) => hooks.publish?.({ type: 'budget_warning', step: spec.label, message });
      this.ledger = new BudgetLedger(spec.budget, spec.label, this.waits, () => hooks.waitsChanged(), warn, spec.budgetCarried);
    }
    if (spec.runBudget) this.lease = new BudgetLease(spec.runBudget.owner, spec.label);
    if (spec.verify) this.verify = new VerifyGate({ ...spec, verify: spec.verify }, { record: (event) => this.record(event), running: this.running, progressed: () => hooks.progressed?.() });
  }

  /** Tools running now. */
  runningTools(): string[] {
    return [...this.running.values()];
  }

  /** Its approvals and questions, and its host's going away (a fleet). */
  waiting(): Waiting[] {
    const host = this.spec.route?.waiting(this.spec.label);
    return host ? [...this.waits.list(), host] : this.waits.list();
  }

  /** Why no turn may start: Temporal terminates a run past its history limit (no cleanup, no reason), and each turn adds to it (before the conversation chain, the whole conversation). */
  private historyFull(turns: number): string | undefined {
    const limits = this.spec.limits;
    const bytes = limits?.usage().bytes ?? 0;
    if (!limits || bytes < HISTORY_STOP_SHARE * limits.max.bytes || !this.patches.has(PATCH_HISTORY_GUARD)) return undefined;
    const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;
    return `the conversation outgrew one workflow history after ${turns} model turns: ${mb(bytes)} of Temporal's ${mb(limits.max.bytes)} (every turn adds its messages and tool results); narrow the task or lower maxTurns`;
  }

  /** The host that holds its workspace, when its run is bound to one. */
  get route(): HostRoute | undefined {
    return this.spec.route;
  }

  /** A final answer to the conversation in `messages`, appending the turns it took (assistant, tool and retry messages). */
  async respond(messages: ModelMessageInput[], system?: string, turnsBefore = 0): Promise<unknown> {
    const tools = await this.tools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    const own = new Map((this.hooks.workflowTools ?? []).map((t) => [t.name, t]));
    const offered = [...tools, ...own.values()];
    let silentTurns = 0;
    const guards = this.guarded ? new TurnGuards() : undefined;
    // An agent forked at a turn counts the turns it was given toward maxTurns.
    for (let turns = turnsBefore; ; turns++) {
      if (turns >= this.maxTurns) {
        const decide = this.spec.choices !== undefined;
        const fix = decide ? ` naming one of ${this.spec.choices?.join(', ')}` : ': raise maxTurns or narrow the prompt';
        throw ApplicationFailure.nonRetryable(`no final answer after ${turns} model turns${fix}`, decide ? 'DecisionInvalid' : 'AgentTurnLimit');
      }
      const full = this.historyFull(turns);
      if (full) throw ApplicationFailure.nonRetryable(full, 'AgentHistoryLimit');
      // The run's lease first (an agent at its turn limit asks for nothing): its answer may bring the run's warning, said in this very turn.
      await this.lease?.beforeTurn();
      const warning = this.ledger?.warning() ?? this.lease?.book.takeWarning();
      if (warning !== undefined) messages.push({ role: 'user', content: warning });
      this.turnStarts.push(messages.length);
      const turn = await this.modelTurn(messages, offered, system ?? this.spec.system);
      messages.push({ role: 'assistant', ...(turn.text && { content: turn.text }), ...(turn.toolCalls.length > 0 && { toolCalls: turn.toolCalls }) });
      this.checkBudget();
      if (turn.toolCalls.length === 0) {
        const correction = guards?.answer(turn);
        if (correction !== undefined) {
          messages.push({ role: 'user', content: correction });
          continue;
        }
        if (this.hooks.silent) {
          messages.push({ role: 'user', content: await this.hooks.silent(++silentTurns) });
          continue;
        }
        const answer = this.finalAnswer(turn);
        const unmet = answer.done ? await this.verify?.unmet() : answer.retry;
        if (answer.done && unmet === undefined) return answer.output;
        if (unmet !== undefined) messages.push({ role: 'user', content: unmet });
        continue;
      }
      silentTurns = 0;
      await this.ledger?.toolCalls(turn.toolCalls.length);
      await this.lease?.toolCalls(turn.toolCalls.length);
      const repeating = guards?.calls(turn.toolCalls);
      await this.gate?.prepare(turn.toolCalls.flatMap((call) => (byName.has(call.name) && call.error === undefined ? [{ tool: (byName.get(call.name) as AgentTool).tool, args: call.args }] : [])));
      const results = await Promise.all(
        turn.toolCalls.map((call, index) => {
          const callId = `${this.turns}.${index + 1}`;
          const mine = own.get(call.name);
          return mine ? this.callWorkflowTool(mine, call, callId) : this.callTool(call, callId, byName).then((message): ToolOutcome => ({ message }));
        }),
      );
      messages.push(...results.map((r) => r.message));
      const final = results.find((r) => r.final)?.final;
      const unmet = final && (await this.verify?.unmet());
      if (final && unmet === undefined) return final.output;
      if (unmet !== undefined) {
        // A team worker that said it was done, and whose check failed, works on.
        this.hooks.reopened?.('its verify check failed');
        messages.push({ role: 'user', content: unmet });
      }
      if (repeating !== undefined) messages.push({ role: 'user', content: repeating });
    }
  }

  /** A tool the workflow answers: audited like the others, never an activity. */
  private async callWorkflowTool(tool: WorkflowTool, call: ModelToolCall, callId: string): Promise<ToolOutcome> {
    this.toolCalls++;
    const reply = (result: unknown, isError?: boolean) => toolReply(call, result, isError);
    if (call.error !== undefined) {
      this.record({ event: 'tool.refused', call: callId, outcome: 'invalid_arguments', tool: tool.name });
      return { message: reply(call.error, true) };
    }
    this.record({ event: 'tool.started', call: callId, tool: tool.name });
    const started = nowMs();
    const { result, isError, final } = await tool.call(call.args, callId);
    this.record({ event: 'tool.finished', call: callId, tool: tool.name, durationMs: nowMs() - started, outcome: isError ? 'error' : 'ok' });
    return { message: reply(result, isError), ...(final && { final }) };
  }

  /** One model call outside the loop (a session's summary): counted and audited like a turn. */
  async complete(messages: ModelMessageInput[], system: string): Promise<ModelTurnResult> {
    return this.modelTurn(messages, [], system, false);
  }

  record(event: Omit<AuditEvent, 'at' | 'step'>): void {
    audit.record({ at: isoAt(nowMs()), step: this.spec.label, ...event });
  }

  /** The tools offered, fixed the first time they are needed (history keeps the list for replay). */
  private tools(): Promise<AgentTool[]> {
    if (!this.offered) {
      // The workspace goes along so a worker can ready the code tools for it while the model takes its first turn.
      const request = { tools: this.spec.tools, workspace: this.spec.workspace, ...(this.spec.worktree && { worktree: true }) };
      this.offered = this.spec.tools.length > 0 ? toolset(this.spec.route).agentToolset(request) : Promise.resolve([]);
    }
    return this.offered;
  }

  /** One model turn; `chain`: sent as the messages since the last turn (a session's summary, asked on other messages, is not). */
  private async modelTurn(messages: ModelMessageInput[], tools: Pick<AgentTool, 'name' | 'description' | 'inputSchema'>[], system: string | undefined, chain = true): Promise<ModelTurnResult> {
    this.turns++;
    this.hooks.changed();
    for (;;) {
      const started = nowMs();
      const budget = turnBudget(this.ledger?.left(), this.lease?.book.left());
      const chained = chain ? this.conversation?.next(messages) : undefined;
      try {
        this.lease?.book.turnStarted();
        const request = {
          ...(this.model !== undefined && { model: this.model }),
          ...(system !== undefined && { system }),
          ...(tools.length > 0 && { tools: tools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema })) }),
          ...(this.spec.output && { outputSchema: this.spec.output }),
          ...(this.spec.mustChange && { mustChange: this.spec.mustChange }),
          // Tool outputs stored outside history are read back by the activity, never into history.
          workspace: this.spec.storeWorkspace ?? this.spec.workspace,
          ...this.streamTo(),
          ...(budget && { budget }),
        };
        const turn: ChainedTurnResult = chained ? await this.models.modelTurnChained({ ...request, ...chained }) : await this.models.modelTurn({ ...request, messages });
        if (chained) this.conversation?.stored(turn.conversation);
        this.ledger?.settle(turn);
        this.lease?.turnEnded(turn);
        this.hooks.progressed?.();
        this.events?.turnEnded(this.turnNumber(), turn, this.model);
        this.usage.inputTokens += turn.usage.inputTokens;
        this.usage.outputTokens += turn.usage.outputTokens;
        if (turn.usage.cachedInputTokens) this.usage.cachedInputTokens = (this.usage.cachedInputTokens ?? 0) + turn.usage.cachedInputTokens;
        const shortened = turn.shortened && { shortened: turn.shortened.toolResults };
        this.record({ event: 'model.turn', turn: this.turns, durationMs: nowMs() - started, ...turn.usage, toolCalls: turn.toolCalls.length, outcome: 'ok', ...shortened });
        return turn;
      } catch (err) {
        this.lease?.turnEnded();
        if (isCancellation(err)) throw err;
        this.record({ event: 'model.turn', turn: this.turns, durationMs: nowMs() - started, outcome: 'error', errorType: asFailure(err).type ?? 'Error' });
        if (chained && asFailure(err).type === CONVERSATION_MISSING) {
          this.conversation?.missing();
          continue;
        }
        // Not started for want of budget: a person extends it (and the turn is asked again), or the agent stops.
        const refused = budget && refusedTurn(err);
        if (refused && this.lease?.book.holds(refused.cap, this.ledger?.left() ?? {})) {
          await this.lease.turnRefused(refused.needs);
          continue;
        }
        if (refused && this.ledger) {
          await this.ledger.exhausted(refused.cap, 'its next model turn does not fit what is left');
          continue;
        }
        const recovery = await this.hooks.recover?.(err, 'model');
        if (!recovery) throw err;
        if (recovery.model !== undefined) this.model = recovery.model;
      }
    }
  }

  /**
   * Where this turn's (or tool call's) events go. With a host that publishes what the workflow sees,
   * the activity sends only the text as it comes, within the host's budget for this turn.
   */
  private streamTo(callId?: string): { stream?: StreamTarget } {
    const to = this.spec.stream;
    if (!to) return {};
    const budget = this.events && callId === undefined ? this.hooks.streamBudget?.() : undefined;
    return {
      stream: {
        workflowId: to.workflowId,
        step: this.spec.label,
        turn: this.turnNumber(),
        ...(callId !== undefined && { callId }),
        ...(this.events && { lifecycle: 'workflow' as const }),
        ...(budget !== undefined && { maxBatches: budget }),
      },
    };
  }

  /** The current turn as the stream counts it (a session's turns go on across its runs). */
  private turnNumber(): number {
    return (this.spec.stream?.turnBase ?? 0) + this.turns;
  }

  private checkBudget(): void {
    const budget = this.spec.maxTokens;
    const used = this.usage.inputTokens + this.usage.outputTokens;
    if (budget !== undefined && used > budget) {
      throw ApplicationFailure.nonRetryable(`used ${used} tokens over ${this.turns} turns; the budget is ${budget} (maxTokens)`, 'AgentTokenBudget');
    }
  }

  /** A final answer; a decision that is not one of its choices gets another turn to say it again. */
  private finalAnswer(turn: ModelTurnResult): { done: true; output: unknown } | { done: false; retry: string } {
    const choices = this.spec.choices;
    if (!choices) return { done: true, output: turn.output !== undefined ? turn.output : (turn.text ?? '') };
    const choice = matchChoice(turn.text ?? '', choices);
    if (choice !== undefined) return { done: true, output: choice };
    return { done: false, retry: `Answer with exactly one of: ${choices.join(', ')}. Nothing else.` };
  }

  // ---- tool calls -----------------------------------------------------------

  private async callTool(call: ModelToolCall, callId: string, tools: Map<string, AgentTool>): Promise<ToolMessage> {
    this.toolCalls++;
    const reply = (result: unknown, isError?: boolean) => toolReply(call, result, isError);
    const tool = tools.get(call.name);
    if (call.error !== undefined || !tool) {
      this.record({ event: 'tool.refused', call: callId, outcome: tool ? 'invalid_arguments' : 'unknown_tool', ...(tool && { tool: tool.tool }) });
      return reply(call.error ?? `no tool named ${call.name}`, true);
    }
    const denial = this.gate ? await this.gate.check(tool.tool, call.args, callId) : await globApproval(this.globs(), tool.tool, call.args, callId);
    if (denial !== undefined) return reply(denial, true);
    const started = nowMs();
    const turn = this.turnNumber();
    this.running.set(callId, tool.tool);
    this.hooks.progressed?.();
    this.record({ event: 'tool.started', call: callId, tool: tool.tool });
    try {
      const result = await this.runToolRecovering(tool.tool, callId, {
        tool: tool.tool,
        params: call.args,
        workspace: this.spec.workspace,
        stepId: this.spec.label,
        ...(this.spec.worktree && { worktree: true }),
        // Outputs go back to the model in the next turn's input: big ones travel by reference, so no turn outgrows a payload.
        inlineLimit: AGENT_INLINE_LIMIT,
        forModel: true,
        ...(this.spec.storeWorkspace && { storeWorkspace: this.spec.storeWorkspace }),
        ...(this.spec.sandbox && { sandbox: this.spec.sandbox }),
        ...this.streamTo(call.id),
      });
      this.record({ event: 'tool.finished', call: callId, tool: tool.tool, durationMs: nowMs() - started, outcome: 'ok', ...(result.unconfined && { sandbox: 'none' }) });
      this.events?.toolEnded(turn, call.id, tool.tool, { output: result.output, attempt: result.attempt });
      return reply(result.output);
    } catch (err) {
      if (isCancellation(err)) throw err;
      this.record({ event: 'tool.finished', call: callId, tool: tool.tool, durationMs: nowMs() - started, outcome: 'error', errorType: asFailure(err).type ?? 'Error' });
      const message = describeFailure(err).message;
      this.events?.toolEnded(turn, call.id, tool.tool, { error: message });
      return reply(message, true);
    } finally {
      this.running.delete(callId);
      this.hooks.progressed?.();
    }
  }

  /** A tool call; a failure the worker recovers from (a repaired worktree) runs it once more. */
  private async runToolRecovering(tool: string, callId: string, request: Parameters<Activities['runTool']>[0]) {
    try {
      return await this.toolActivities(tool, callId).runTool(request);
    } catch (err) {
      if (isCancellation(err) || !(await this.hooks.recover?.(err, 'tool', tool))) throw err;
      return this.toolActivities(tool, `${callId}.retry`).runTool(request);
    }
  }

  /** What runs from before command rules decide with (glob-approval.ts). */
  private globs(): GlobApprovalContext {
    const { label, approvals, approvalTimeout } = this.spec;
    return { label, approvals, approvalTimeout, waits: this.waits, waitsChanged: () => this.hooks.waitsChanged(), record: (event) => this.record(event) };
  }

  private toolActivities(tool: string, callId: string) {
    return toolActivities(this.spec.label, tool, callId, this.spec.toolHeartbeatTimeout, this.spec.route);
  }
}

