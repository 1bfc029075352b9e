/**
 * `agentTask`: one LLM agent, as a child workflow of a plan step. Its loop is model turn → the
 * tool calls of that turn, in parallel → their results → the next turn, until a final answer,
 * `maxTurns` or the token budget. Every model turn and tool call is an activity, so a worker that
 * dies mid-loop costs nothing already done: completed turns are in history and never paid twice.
 * Bad tool calls (unknown tool, invalid arguments, a tool's error, a denial) go back to the model
 * as tool results; only cadre's own limits and a failing model end the agent.
 */
import {
  ApplicationFailure,
  getExternalWorkflowHandle,
  isCancellation,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities, AgentTool, ModelMessageInput, ModelToolCall, ModelTurnResult } from '../activities';
import type { AgentSpec, DecideSpec } from '../spec/types';
import { approvalFor, matchChoice } from './approvals';
import { audit, type AuditEvent } from './audit';
import { isoAt, nowMs } from './clock';
import {
  APPROVAL_CHOICES,
  type AgentDiagnostics,
  type AgentSummary,
  type TokenUsage,
  agentAnswerSignal,
  agentDiagnosticsQuery,
  agentWaitsSignal,
  answerUpdate,
} from './definitions';
import { describeFailure } from './failures';
import { HumanWaits } from './waits';

export interface AgentTaskInput {
  /** The plan step (`review`, or `review[2]` for a forEach item): audit and wait ids name it. */
  step: string;
  action: { kind: 'agent'; agent: AgentSpec } | { kind: 'decide'; decide: DecideSpec };
  /** The prompt with its templates resolved. */
  prompt: string;
  workspace: string;
  worktree?: boolean;
}

export interface AgentResult extends AgentSummary {
  output: unknown;
}

/** Tool results are sent back to the model; this keeps a runaway one from filling history. */
const MAX_RESULT_CHARS = 64 * 1024;
/** Arguments shown in an approval's prompt: enough to decide, never a whole file. */
const MAX_PROMPT_ARGS_CHARS = 2000;
const DECIDE_TURNS = 3;

const models = proxyActivities<Activities>({
  startToCloseTimeout: '5m',
  // The activity beats every second while it waits on the provider: a dead worker's turn moves on in 10 s.
  heartbeatTimeout: '10s',
  summary: 'model turn',
  retry: {
    initialInterval: '1s',
    backoffCoefficient: 2,
    maximumInterval: '1m',
    maximumAttempts: 8,
    // Fixing these takes a person (a key, a model name, a shorter prompt); retrying only repeats the bill.
    nonRetryableErrorTypes: [
      'ModelConfigInvalid',
      'BadModelRequest',
      'ModelAuthFailed',
      'ModelNotFound',
      'ModelContextTooLong',
      'ModelRequestRejected',
      'StructuredOutputInvalid',
      'ScriptMismatch',
    ],
  },
});

const toolset = proxyActivities<Activities>({ startToCloseTimeout: '1m', retry: { maximumAttempts: 3 }, summary: 'agent tools' });

export async function agentTask(input: AgentTaskInput): Promise<AgentResult> {
  return new AgentRun(input).run();
}

type ToolMessage = Extract<ModelMessageInput, { role: 'tool' }>;

class AgentRun {
  private readonly messages: ModelMessageInput[] = [];
  private readonly usage: TokenUsage = { inputTokens: 0, outputTokens: 0 };
  private readonly running = new Map<string, string>();
  private readonly waits = new HumanWaits(true, () => this.publish());
  private readonly startedAtMs = nowMs();
  private readonly maxTurns: number;
  private status: AgentDiagnostics['status'] = 'running';
  private turns = 0;
  private toolCalls = 0;

  constructor(private readonly input: AgentTaskInput) {
    this.maxTurns = input.action.kind === 'agent' ? input.action.agent.maxTurns : DECIDE_TURNS;
    setHandler(agentDiagnosticsQuery, () => this.diagnostics());
    // Answers come straight to the agent (`cadre answer <agent id>`), or through its plan run.
    setHandler(answerUpdate, ({ waitId, value }) => (this.waits.accept(waitId, value), { accepted: true as const }), {
      validator: (answer) => this.waits.validate(answer?.waitId, answer?.value),
    });
    setHandler(agentAnswerSignal, ({ waitId, value }) => {
      try {
        this.waits.validate(waitId, value);
      } catch {
        return; // the plan run checked it; a late duplicate finds the wait closed
      }
      this.waits.accept(waitId, value);
    });
  }

  async run(): Promise<AgentResult> {
    this.record({ event: 'message.received', chars: this.input.prompt.length });
    this.publish();
    try {
      const output = await this.loop();
      this.status = 'completed';
      this.record({ event: 'agent.finished', outcome: 'completed', turn: this.turns });
      return { ...this.summary(), output };
    } catch (err) {
      if (isCancellation(err)) {
        this.record({ event: 'agent.finished', outcome: 'cancelled' });
        throw err;
      }
      this.status = 'failed';
      const failure = asFailure(err);
      this.record({ event: 'agent.finished', outcome: 'failed', errorType: failure.type ?? 'Error' });
      // The summary travels with the failure, so the plan's record shows what the agent used.
      throw ApplicationFailure.create({ type: failure.type ?? 'AgentFailed', message: failure.message, nonRetryable: failure.nonRetryable ?? false, details: [this.summary()] });
    } finally {
      this.publish();
    }
  }

  private async loop(): Promise<unknown> {
    const spec = this.input.action;
    const tools = spec.kind === 'agent' && spec.agent.tools.length > 0 ? await toolset.agentToolset({ tools: spec.agent.tools }) : [];
    const byName = new Map(tools.map((t) => [t.name, t]));
    this.messages.push({ role: 'user', content: this.input.prompt });
    for (;;) {
      if (this.turns >= this.maxTurns) {
        const fix = spec.kind === 'agent' ? ': raise agent.maxTurns or narrow the prompt' : ` of ${spec.decide.choices.join(', ')}`;
        throw ApplicationFailure.nonRetryable(`no final answer after ${this.turns} model turns${fix}`, spec.kind === 'agent' ? 'AgentTurnLimit' : 'DecisionInvalid');
      }
      const turn = await this.modelTurn(tools);
      this.messages.push({ role: 'assistant', ...(turn.text && { content: turn.text }), ...(turn.toolCalls.length > 0 && { toolCalls: turn.toolCalls }) });
      this.checkBudget();
      if (turn.toolCalls.length === 0) {
        const answer = this.finalAnswer(turn);
        if (answer.done) return answer.output;
        this.messages.push({ role: 'user', content: answer.retry });
        continue;
      }
      const results = await Promise.all(turn.toolCalls.map((call, index) => this.callTool(call, `${this.turns}.${index + 1}`, byName)));
      this.messages.push(...results);
    }
  }

  private async modelTurn(tools: AgentTool[]): Promise<ModelTurnResult> {
    const spec = this.input.action;
    this.turns++;
    this.publish();
    const started = nowMs();
    const agent = spec.kind === 'agent' ? spec.agent : undefined;
    const model = agent ? agent.model : spec.kind === 'decide' ? spec.decide.model : undefined;
    try {
      const turn = await models.modelTurn({
        ...(model !== undefined && { model }),
        system: agent ? agent.system : decideSystem(spec.kind === 'decide' ? spec.decide.choices : []),
        messages: this.messages,
        ...(tools.length > 0 && { tools: tools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema })) }),
        ...(agent?.output && { outputSchema: agent.output }),
      });
      this.usage.inputTokens += turn.usage.inputTokens;
      this.usage.outputTokens += turn.usage.outputTokens;
      this.record({ event: 'model.turn', turn: this.turns, durationMs: nowMs() - started, ...turn.usage, toolCalls: turn.toolCalls.length, outcome: 'ok' });
      return turn;
    } catch (err) {
      if (!isCancellation(err)) this.record({ event: 'model.turn', turn: this.turns, durationMs: nowMs() - started, outcome: 'error', errorType: asFailure(err).type ?? 'Error' });
      throw err;
    }
  }

  private checkBudget(): void {
    const budget = this.input.action.kind === 'agent' ? this.input.action.agent.maxTokens : undefined;
    const used = this.usage.inputTokens + this.usage.outputTokens;
    if (budget !== undefined && used > budget) {
      throw ApplicationFailure.nonRetryable(`used ${used} tokens over ${this.turns} turns; the budget is ${budget} (agent.maxTokens)`, 'AgentTokenBudget');
    }
  }

  /** A final answer; a decision that is not one of its choices gets one more turn to say it again. */
  private finalAnswer(turn: ModelTurnResult): { done: true; output: unknown } | { done: false; retry: string } {
    const spec = this.input.action;
    if (spec.kind === 'agent') return { done: true, output: turn.output !== undefined ? turn.output : (turn.text ?? '') };
    const choice = matchChoice(turn.text ?? '', spec.decide.choices);
    if (choice !== undefined) return { done: true, output: choice };
    return { done: false, retry: `Answer with exactly one of: ${spec.decide.choices.join(', ')}. Nothing else.` };
  }

  // ---- tool calls -----------------------------------------------------------

  private async callTool(call: ModelToolCall, callId: string, tools: Map<string, AgentTool>): Promise<ToolMessage> {
    this.toolCalls++;
    const reply = (result: unknown, isError = false): ToolMessage => ({
      role: 'tool',
      toolCallId: call.id,
      toolName: call.name,
      result: clipResult(result),
      ...(isError && { isError: true }),
    });
    const tool = tools.get(call.name);
    if (call.error !== undefined || !tool) {
      this.record({ event: 'tool.refused', call: callId, outcome: tool ? 'invalid_arguments' : 'unknown_tool', ...(tool && { tool: tool.tool }) });
      return reply(call.error ?? `no tool named ${call.name}`, true);
    }
    const denial = await this.approval(tool.tool, call.args, callId);
    if (denial !== undefined) return reply(denial, true);
    const started = nowMs();
    this.running.set(callId, tool.tool);
    this.record({ event: 'tool.started', call: callId, tool: tool.tool });
    try {
      const result = await this.tools(tool.tool, callId).runTool({
        tool: tool.tool,
        params: call.args,
        workspace: this.input.workspace,
        stepId: this.input.step,
        ...(this.input.worktree && { worktree: true }),
      });
      this.record({ event: 'tool.finished', call: callId, tool: tool.tool, durationMs: nowMs() - started, outcome: 'ok' });
      return reply(result.output);
    } catch (err) {
      if (isCancellation(err)) throw err;
      this.record({ event: 'tool.finished', call: callId, tool: tool.tool, durationMs: nowMs() - started, outcome: 'error', errorType: asFailure(err).type ?? 'Error' });
      return reply(describeFailure(err).message, true);
    } finally {
      this.running.delete(callId);
    }
  }

  private tools(tool: string, callId: string) {
    return proxyActivities<Activities>({
      activityId: `${this.input.step}/${callId}`,
      summary: `${this.input.step}: ${tool}`,
      scheduleToCloseTimeout: '10m',
      heartbeatTimeout: '10s',
      retry: { maximumAttempts: 3, initialInterval: '1s' },
    });
  }

  /** Undefined when the call may run; otherwise the denial the model reads, reason included. */
  private async approval(tool: string, args: Record<string, unknown>, callId: string): Promise<string | undefined> {
    if (this.input.action.kind !== 'agent') return `${tool} is not available here`;
    const agent = this.input.action.agent;
    const policy = approvalFor(agent.approvals, tool, args);
    if (policy === 'allow') return undefined;
    if (policy === 'deny') {
      this.record({ event: 'approval.decided', call: callId, tool, outcome: 'denied_by_policy' });
      return `denied: the approval policy of this step denies ${tool} for these arguments`;
    }
    const id = `${this.input.step}/call-${callId}`;
    this.record({ event: 'approval.asked', call: callId, tool });
    const shown = clip(JSON.stringify(args), MAX_PROMPT_ARGS_CHARS);
    const value = await this.waits.wait(
      { id, kind: 'approval', prompt: `Allow ${tool} with ${shown}? approve, or deny[:reason]`, choices: APPROVAL_CHOICES, timeout: agent.approvalTimeout },
      { opened: () => this.waitsChanged(), closed: () => this.waitsChanged() },
    );
    if (value === undefined) {
      this.record({ event: 'approval.decided', call: callId, tool, outcome: 'timed_out' });
      return `denied: nobody approved ${tool} within ${agent.approvalTimeout}`;
    }
    const colon = value.indexOf(':');
    const decision = colon < 0 ? value : value.slice(0, colon);
    this.record({ event: 'approval.decided', call: callId, tool, outcome: decision === 'approve' ? 'approved' : 'denied' });
    if (decision === 'approve') return undefined;
    const reason = colon < 0 ? '' : value.slice(colon + 1).trim();
    return `denied by a person${reason ? `: ${reason}` : ''}`;
  }

  /** The plan run shows what its agents wait for, and passes answers on. */
  private waitsChanged(): void {
    this.status = this.waits.size > 0 ? 'waiting' : 'running';
    this.publish();
    const parent = workflowInfo().parent;
    if (!parent) return;
    const waits = this.waits.list();
    // A parent that has ended cannot be told; the agent goes on either way.
    getExternalWorkflowHandle(parent.workflowId, parent.runId)
      .signal(agentWaitsSignal, { workflowId: workflowInfo().workflowId, waits })
      .catch(() => undefined);
  }

  // ---- what clients see -----------------------------------------------------

  private record(event: Omit<AuditEvent, 'at' | 'step'>): void {
    audit.record({ at: isoAt(nowMs()), step: this.input.step, ...event });
  }

  private summary(): AgentSummary {
    return { workflowId: workflowInfo().workflowId, turns: this.turns, toolCalls: this.toolCalls, usage: { ...this.usage } };
  }

  private diagnostics(): AgentDiagnostics {
    return {
      step: this.input.step,
      kind: this.input.action.kind,
      status: this.status,
      turns: this.turns,
      maxTurns: this.maxTurns,
      toolCalls: this.toolCalls,
      usage: { ...this.usage },
      running: [...this.running.values()],
      waiting: this.waits.list(),
      startedAt: isoAt(this.startedAtMs),
    };
  }

  /** The Web UI's Current Details: what the agent is doing, as a Markdown list. */
  private publish(): void {
    const d = this.diagnostics();
    const lines = [
      `**${d.kind} ${d.step}**: ${d.status}`,
      '',
      `- turn ${d.turns} of at most ${d.maxTurns}`,
      `- ${d.toolCalls} tool calls${d.running.length ? `, running: ${d.running.join(', ')}` : ''}`,
      `- tokens: ${d.usage.inputTokens} in, ${d.usage.outputTokens} out`,
      ...d.waiting.map((w) => `- waiting for approval \`${w.id}\`: \`cadre approve <run> ${w.id}\` or \`cadre deny <run> ${w.id} --reason ...\``),
    ];
    setCurrentDetails(lines.join('\n'));
  }
}

function decideSystem(choices: string[]): string {
  return `Decide. Answer with exactly one of these choices and nothing else: ${choices.join(', ')}.`;
}

function asFailure(err: unknown): ApplicationFailure {
  for (let cursor: unknown = err, depth = 0; cursor instanceof Error && depth < 10; depth++) {
    if (cursor instanceof ApplicationFailure) return cursor;
    cursor = (cursor as { cause?: unknown }).cause;
  }
  const message = describeFailure(err).message;
  return ApplicationFailure.create({ type: 'AgentFailed', message, nonRetryable: false });
}

function clipResult(result: unknown): unknown {
  const text = typeof result === 'string' ? result : JSON.stringify(result);
  if (text === undefined || text.length <= MAX_RESULT_CHARS) return result ?? null;
  return `${text.slice(0, MAX_RESULT_CHARS)}… (${text.length - MAX_RESULT_CHARS} more characters not shown; read the rest in parts, e.g. with shell and head/tail)`;
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length - max} more characters)` : text;
}
