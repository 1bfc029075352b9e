/**
 * `agentTask`: one LLM agent, as a child workflow of a plan step (agent-loop.ts runs the loop).
 * It answers the `agentDiagnostics` query, takes approvals by the `answer` update (or from its plan
 * run by signal), tells its plan run what it waits for, and shows its progress in the Web UI.
 */
import { ApplicationFailure, getExternalWorkflowHandle, isCancellation, setCurrentDetails, setHandler, workflowInfo } from '@temporalio/workflow';
import type { ModelMessageInput } from '../activities';
import type { AgentSpec, DecideSpec } from '../spec/types';
import { AgentLoop, asFailure } from './agent-loop';
import { isoAt, nowMs } from './clock';
import { type AgentDiagnostics, type AgentSummary, agentAnswerSignal, agentDiagnosticsQuery, agentWaitsSignal, answerUpdate } from './definitions';

export interface AgentTaskInput {
  /** The plan step (`review`, or `review[2]` for a forEach item): audit and wait ids name it. */
  step: string;
  action: { kind: 'agent'; agent: AgentSpec } | { kind: 'decide'; decide: DecideSpec };
  /** The prompt with its templates resolved. */
  prompt: string;
  workspace: string;
  worktree?: boolean;
  /** The plan's workspace, whose blob store holds big outputs, when `workspace` is a worktree. */
  storeWorkspace?: string;
}

export interface AgentResult extends AgentSummary {
  output: unknown;
}

const DECIDE_TURNS = 3;

export async function agentTask(input: AgentTaskInput): Promise<AgentResult> {
  return new AgentRun(input).run();
}

class AgentRun {
  private readonly loop: AgentLoop;
  private readonly startedAtMs = nowMs();
  private status: AgentDiagnostics['status'] = 'running';

  constructor(private readonly input: AgentTaskInput) {
    const { action } = input;
    const common = {
      label: input.step,
      workspace: input.workspace,
      ...(input.worktree && { worktree: true }),
      ...(input.storeWorkspace && { storeWorkspace: input.storeWorkspace }),
    };
    this.loop = new AgentLoop(
      action.kind === 'agent'
        ? { ...common, ...action.agent, ...(action.agent.system === undefined && action.agent.role && { system: `You are the ${action.agent.role} of the team.` }) }
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
      { changed: () => this.publish(), waitsChanged: () => this.waitsChanged() },
    );
    setHandler(agentDiagnosticsQuery, () => this.diagnostics());
    // Answers come straight to the agent (`cadre answer <agent id>`), or through its plan run.
    setHandler(answerUpdate, ({ waitId, value }) => (this.loop.waits.accept(waitId, value), { accepted: true as const }), {
      validator: (answer) => this.loop.waits.validate(answer?.waitId, answer?.value),
    });
    setHandler(agentAnswerSignal, ({ waitId, value }) => {
      try {
        this.loop.waits.validate(waitId, value);
      } catch {
        return; // the plan run checked it; a late duplicate finds the wait closed
      }
      this.loop.waits.accept(waitId, value);
    });
  }

  async run(): Promise<AgentResult> {
    this.loop.record({ event: 'message.received', chars: this.input.prompt.length });
    this.publish();
    const messages: ModelMessageInput[] = [{ role: 'user', content: this.input.prompt }];
    try {
      const output = await this.loop.respond(messages);
      this.status = 'completed';
      this.loop.record({ event: 'agent.finished', outcome: 'completed', turn: this.loop.turns });
      return { ...this.summary(), output };
    } catch (err) {
      if (isCancellation(err)) {
        this.loop.record({ event: 'agent.finished', outcome: 'cancelled' });
        throw err;
      }
      this.status = 'failed';
      const failure = asFailure(err);
      this.loop.record({ event: 'agent.finished', outcome: 'failed', errorType: failure.type ?? 'Error' });
      // The summary travels with the failure, so the plan's record shows what the agent used.
      throw ApplicationFailure.create({ type: failure.type ?? 'AgentFailed', message: failure.message, nonRetryable: failure.nonRetryable ?? false, details: [this.summary()] });
    } finally {
      this.publish();
    }
  }

  /** The plan run shows what its agents wait for, and passes answers on. */
  private waitsChanged(): void {
    this.status = this.loop.waits.size > 0 ? 'waiting' : 'running';
    this.publish();
    const parent = workflowInfo().parent;
    if (!parent) return;
    // A parent that has ended cannot be told; the agent goes on either way.
    getExternalWorkflowHandle(parent.workflowId, parent.runId)
      .signal(agentWaitsSignal, { workflowId: workflowInfo().workflowId, waits: this.loop.waiting() })
      .catch(() => undefined);
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
