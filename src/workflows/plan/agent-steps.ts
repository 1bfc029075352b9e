/**
 * The agent and decide steps of a plan run: each runs an `agentTask` child workflow. The run
 * mirrors what its agents wait for (they signal it), so `diagnostics.waiting`, the run's status
 * and `cadre list --status waiting` show a tool call waiting for approval, and an answer sent to
 * the run is checked there and passed on to the agent.
 */
import { ApplicationFailure, ChildWorkflowFailure, executeChild, getExternalWorkflowHandle } from '@temporalio/workflow';
import type { ToolResult } from '../../activities';
import { durationMs } from '../../plan-format/duration';
import type { CompiledStep } from '../../plan-format/types';
import { AGENT_TASK_WORKFLOW, type AgentResult, type AgentTaskInput, type AgentTaskWorkflow } from '../../protocol/agent-task';
import { isoAt, nowMs } from '../common/clock';
import { type AgentSummary, type Waiting, type WorkerRecord, agentAnswerSignal, agentWaitsSignal, workerMovesSignal, workerStateSignal } from '../../protocol/definitions';
import { TeamBoard } from '../../protocol/team-board';
import { retryPolicy } from './step-options';
import { hostOfWait, isHostWait } from '../../protocol/host-liveness';
import { HumanWaits } from './waits';
import { PATCH_REASKED_WAITS } from '../../protocol/patches';
import type { PlanPatches } from './plan-patches';
import { WORKER_STATES } from '../../protocol/worker-state';
import { count, listOf, optional, oneOf, shape, text, wellFormed } from '../../protocol/input-checks';
import { type RunLimits, onSignal } from '../common/run-limits';
import type { RunStream } from '../common/run-stream';
import type { HostRoute } from '../common/host-route';
import type { AgentResume } from '../../protocol/forks';
import type { BudgetOwner } from '../../protocol/budget-lease';

const WAITS_SIGNAL = shape({ workflowId: text, waits: listOf(shape({ id: text, kind: text, prompt: text, since: text, choices: optional(listOf(text)) })) });
const MOVE = { seq: count, from: oneOf(...WORKER_STATES), to: oneOf(...WORKER_STATES), reason: text, at: text };
const WORKER_STATE_SIGNAL = shape({ workflowId: text, ...MOVE, step: optional(text), role: optional(text) });
/** A batch of moves: at most what a worker holds for one signal (worker-reporter.ts), so a flood is dropped whole. */
const WORKER_MOVES_SIGNAL = shape({ workflowId: text, step: optional(text), role: optional(text), moves: listOf(shape(MOVE)) }, (v, at) =>
  (v.moves as unknown[]).length > 1000 ? `${at}.moves: more than 1000` : undefined,
);

/** A failed agent is not re-run unless the step asks: every turn would be paid again. */
const DEFAULT_AGENT_ATTEMPTS = 1;

export interface AgentStart {
  step: CompiledStep;
  /** The child's workflow id. */
  workflowId: string;
  input: AgentTaskInput;
  timeout?: string;
}

export class AgentSteps {
  /** Agent workflow id → the step it runs for. */
  private readonly children = new Map<string, string>();
  /** What the agents wait for, by wait id; answers are checked here before they go on. */
  private readonly waits: HumanWaits;
  private readonly owners = new Map<string, string>();
  /** Each agent's worker state, as it signals it. */
  private readonly board: TeamBoard;
  /** When each wait was asked, to tell an agent's retry asking again from a signal sent before an answer. */
  private readonly asked = new Map<string, string>();
  /** Runs recorded before re-asked waits were opened again ignored them, and must replay that way. */
  private readonly reasks: boolean;
  /** A fork's agent forked at a turn: the conversation it goes on from, by step (fork-start.ts). */
  readonly resumes = new Map<string, AgentResume>();
  /** The plan's budget, when it has one: every agent of the run spends it by a lease (run-budget.ts). */
  runBudget?: BudgetOwner;

  constructor(
    patches: PlanPatches,
    private readonly limits: RunLimits,
    /** Where the run says its agents stream (runs recorded before agents had streams of their own: nowhere). */
    private readonly stream: RunStream | undefined,
    private readonly onWaiting: (step: string, waiting: boolean) => void,
    onWorkerChange: (record: WorkerRecord) => void,
    /** The host the run's workspace is bound to (workspace-host.ts): its agents' activities go there. */
    private readonly hostRoute: () => HostRoute | undefined = () => undefined,
  ) {
    this.reasks = patches.has(PATCH_REASKED_WAITS);
    this.waits = new HumanWaits(true, () => undefined, patches);
    this.board = new TeamBoard(onWorkerChange);
    // Anyone can send signals: only well-formed ones are taken, and from workers the run knows.
    onSignal(limits, agentWaitsSignal, (signal) => {
      if (wellFormed(signal, WAITS_SIGNAL)) this.update(signal.workflowId, signal.waits);
    });
    onSignal(limits, workerStateSignal, (signal) => {
      if (wellFormed(signal, WORKER_STATE_SIGNAL)) this.board.apply(signal, isoAt(nowMs()));
    });
    onSignal(limits, workerMovesSignal, (signal) => {
      if (!wellFormed(signal, WORKER_MOVES_SIGNAL)) return;
      const { moves, ...who } = signal;
      const at = isoAt(nowMs());
      for (const move of moves) this.board.apply({ ...who, ...move }, at);
    });
  }

  workers(): WorkerRecord[] {
    return this.board.records();
  }

  /** The board as a run before this one left it (continue-as-new). */
  restoreWorkers(records: WorkerRecord[]): void {
    this.board.restore(records);
  }

  /** A worker the run starts outside its steps (a specialist answering a question). */
  track(workflowId: string, step: string, details: { role?: string }): void {
    this.board.add(workflowId, step, details);
    this.stream?.announceAgent(step, workflowId, 'agent');
  }

  /** What the run's agents are told of streams and limits: their own streams (runs since agent-streams), the run's limits. */
  childInput(): Pick<AgentTaskInput, 'ownStream' | 'limits' | 'hostQueue' | 'hostLostAfterMs' | 'runBudget'> {
    return { ...(this.stream && { ownStream: true as const }), ...(this.limits.given && { limits: this.limits.given }), ...this.hostRoute()?.childInput(), ...(this.runBudget && { runBudget: this.runBudget }) };
  }

  get waiting(): number {
    return this.waits.size;
  }

  list(): Waiting[] {
    return this.waits.list();
  }

  knows(waitId: unknown): boolean {
    return typeof waitId === 'string' && this.waits.knows(waitId);
  }

  validate(waitId: unknown, value: unknown): void {
    this.waits.validate(waitId, value);
  }

  /** Records the answer (the first one wins) and passes it on to the agent that waits for it. */
  async forward(waitId: string, value: string): Promise<void> {
    const workflowId = this.owners.get(waitId) as string;
    this.waits.accept(waitId, value);
    this.changed(workflowId);
    await getExternalWorkflowHandle(workflowId).signal(agentAnswerSignal, { waitId, value });
  }

  async run({ step, workflowId, input, timeout }: AgentStart, started: (summary: AgentSummary) => void): Promise<ToolResult> {
    this.children.set(workflowId, step.id);
    this.board.add(workflowId, input.step, { ...(step.action.kind === 'agent' && step.action.agent.role && { role: step.action.agent.role }), ...(input.worktree && { worktree: input.workspace }) });
    started({ workflowId });
    // Its turns stream on its own workflow: readers follow it from here.
    this.stream?.announceAgent(input.step, workflowId, input.action.kind);
    try {
      const result: AgentResult = await executeChild<AgentTaskWorkflow>(AGENT_TASK_WORKFLOW, {
        workflowId,
        args: [{ ...input, ...this.childInput() }],
        ...(timeout !== undefined && { workflowExecutionTimeout: durationMs(timeout) }),
        retry: retryPolicy(step, DEFAULT_AGENT_ATTEMPTS),
      });
      const { output, ...summary } = result;
      started(summary);
      return { output, attempt: 0 };
    } catch (err) {
      // A failed agent sends what it used in its failure's details.
      const summary = summaryOf(err);
      if (summary) started(summary);
      throw err;
    } finally {
      this.release(workflowId);
    }
  }

  private update(workflowId: string, waits: Waiting[]): void {
    if (!this.children.has(workflowId)) return;
    const current = new Set(waits.map((w) => w.id));
    for (const [id, owner] of this.owners) {
      if (owner === workflowId && !current.has(id)) this.waits.close(id);
    }
    for (const wait of waits) {
      // A wait answered here stays answered, whatever a signal sent before the answer arrived says;
      // the same id asked anew (a later `since`: the agent's retry asks its calls again) is a new wait.
      if (this.waits.knows(wait.id) && !(this.reasks && this.asked.get(wait.id) !== wait.since && !this.isOpen(wait.id))) continue;
      this.owners.set(wait.id, workflowId);
      this.asked.set(wait.id, wait.since);
      this.waits.openWait(wait, wait.since);
    }
    this.changed(workflowId);
  }

  /**
   * A child that is not an agent (a forEach chunk) whose waits the run shows as its step's, as an
   * agent's: a chunk waiting for an unreachable host. Returns what to call when it ends.
   */
  follow(workflowId: string, step: string): () => void {
    this.children.set(workflowId, step);
    return () => this.release(workflowId);
  }

  /** A child ended: what it waited for is over. */
  private release(workflowId: string): void {
    for (const [id, owner] of this.owners) {
      if (owner === workflowId) this.waits.close(id);
    }
    this.changed(workflowId);
  }

  /** The hosts the run's agents and chunks wait for, unreachable. */
  hostsLost(): string[] {
    return this.waits.list().flatMap((w) => (isHostWait(w.id) ? [hostOfWait(w.id)] : []));
  }

  private isOpen(id: string): boolean {
    return this.waits.list().some((w) => w.id === id);
  }

  private changed(workflowId: string): void {
    const step = this.children.get(workflowId);
    if (step === undefined) return;
    const waiting = [...this.owners].some(([id, owner]) => owner === workflowId && this.waits.list().some((w) => w.id === id));
    this.onWaiting(step, waiting);
  }
}

function summaryOf(err: unknown): AgentSummary | undefined {
  if (!(err instanceof ChildWorkflowFailure) || !(err.cause instanceof ApplicationFailure)) return undefined;
  const details = err.cause.details?.[0] as Partial<AgentSummary> | undefined;
  return typeof details?.workflowId === 'string' && typeof details.turns === 'number' ? (details as AgentSummary) : undefined;
}
