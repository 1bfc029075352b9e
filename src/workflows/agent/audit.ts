/**
 * The audit trail of agents, sent from workflow code through a sink that the worker writes as
 * JSONL (worker/audit-log.ts). Sinks do not run on replay, so a replayed run writes nothing twice.
 * Events carry ids, names, counts, durations and outcomes, never content: no prompt, argument,
 * output or answer text, so an audit file can be shared where the conversation cannot.
 */
import { proxySinks, type Sinks } from '@temporalio/workflow';

export type AuditEventName =
  | 'message.received'
  | 'model.turn'
  | 'tool.started'
  | 'tool.finished'
  | 'tool.refused'
  | 'tool.unconfined'
  | 'approval.asked'
  | 'approval.decided'
  | 'agent.finished'
  | 'worker.state'
  | 'worker.recovery'
  | 'signal.refused'
  | 'error';

export interface AuditEvent {
  event: AuditEventName;
  /** Workflow time (ISO 8601). */
  at: string;
  step: string;
  turn?: number;
  /** `<turn>.<index>`: the call's place in the conversation (model-made ids are not trusted into files). */
  call?: string;
  tool?: string;
  durationMs?: number;
  inputTokens?: number;
  outputTokens?: number;
  /** ok, error, denied, approved, timed_out, completed, failed, ... */
  outcome?: string;
  /** An error's type (BadToolInput, ModelRateLimited, ...), never its message, which may quote content. */
  errorType?: string;
  /** Sizes say what happened without saying what was said. */
  chars?: number;
  toolCalls?: number;
  /** `none` when the call's processes ran outside the sandbox (people chose `sandbox: none`). */
  sandbox?: string;
  /** A team worker's new state (worker.state). */
  state?: string;
  /** A failure's class and what the worker did about it (worker.recovery). */
  errorClass?: string;
  recovery?: string;
  /** Tool results shortened so a turn fit the model's context (model.turn). */
  shortened?: number;
  /** A signal the agent sent that Temporal refused (signal.refused): its name. */
  signal?: string;
}

export interface AuditSinks extends Sinks {
  audit: { record(event: AuditEvent): void };
}

export const { audit } = proxySinks<AuditSinks>();
