/**
 * An agent's stream and its count of Temporal's per-run limits (docs/streaming.md). Started by a
 * run that says so (`ownStream`), the agent hosts a stream of its own: its activities publish the
 * text as it comes, the loop publishes what it sees (turns' ends, tool calls and results), its
 * subtasks are announced there, and `agent_ended` closes it. Its text stops, said once, when the
 * agent nears its limits (stream-budget.ts). An agent of a run recorded earlier streams to the
 * run's root, as it did.
 */
import { CancellationScope, log, workflowInfo } from '@temporalio/workflow';
import type { Waiting } from '../../protocol/definitions';
import type { RunLimitValues } from '../../plan-format/limits';
import { RunLimits } from '../common/run-limits';
import { RunStream } from '../common/run-stream';
import type { LoopHooks } from './loop-contract';
import { StreamBudget } from './stream-budget';

export class AgentStream {
  readonly limits: RunLimits;
  private readonly stream?: RunStream;
  private readonly budget?: StreamBudget;

  constructor(
    private readonly step: string,
    own: boolean,
    private readonly given?: Partial<RunLimitValues>,
  ) {
    this.limits = new RunLimits(given, (warning) => this.stream?.publish({ type: 'limits_warning', step, ...warning }));
    if (!own) return;
    this.stream = new RunStream(undefined, this.limits);
    const stream = this.stream;
    this.budget = new StreamBudget(this.limits, (reason) => stream.publish({ type: 'stream_shed', step, reason }));
  }

  /** Whether the agent hosts a stream of its own (its subtasks then do too). */
  get own(): boolean {
    return this.stream !== undefined;
  }

  /** Where its activities publish. */
  target(): { workflowId: string } {
    return { workflowId: this.stream ? workflowInfo().workflowId : (workflowInfo().root?.workflowId ?? workflowInfo().workflowId) };
  }

  /** The loop's hooks for what it publishes itself and how much its turns may stream. */
  hooks(): Pick<LoopHooks, 'publish' | 'streamBudget'> {
    const { stream, budget } = this;
    return stream && budget ? { publish: (event) => stream.publish(event), streamBudget: () => budget.nextTurn() } : {};
  }

  /** A signal to its run that Temporal refused: the worker's log and, for readers, its stream. */
  refused(signal: string, message: string): void {
    const said = `its run took no more signals (Temporal's limit of signals a run): ${signal} did not reach it (${message})`;
    log.warn(`CadreLimits: agent ${workflowInfo().workflowId}: ${said}`);
    this.stream?.publish({ type: 'error', step: this.step, errorType: 'SignalCountLimitExceeded', message: said, retryable: false });
  }

  /** Its waits, in its own stream: when its run does not hear of them, readers of the agent still see them. */
  announceWaits(waits: Waiting[]): void {
    this.stream?.announceWaits(waits, workflowInfo().workflowId);
  }

  /** What a subtask it starts is told of streams and limits: as this agent was. */
  childInput(): { ownStream?: true; limits?: Partial<RunLimitValues> } {
    return { ...(this.own && { ownStream: true as const }), ...(this.given && { limits: this.given }) };
  }

  /** A subtask it started: readers follow the subtask's stream from here. */
  announce(step: string, workflowId: string): void {
    this.stream?.announceAgent(step, workflowId, 'agent');
  }

  /** The stream's last event, then its readers' long polls return (rather than find the agent gone). */
  async end(status: 'completed' | 'failed' | 'cancelled'): Promise<void> {
    const stream = this.stream;
    if (!stream) return;
    stream.publish({ type: 'agent_ended', step: this.step, status });
    await CancellationScope.nonCancellable(() => stream.drain());
  }
}
