/** cadre's public API: the typed client, plan loading and validation, and the shapes they use. */
export { CadreClient, CadreError, UsageError, defaultWorkflowId, isFinal, type ConnectOptions, type RunSummary, type StartOptions } from './client/client';
export { PlanError, loadPlan, parsePlanText } from './plan-format/load';
export { formatIssues, validatePlan, type PlanIssue, type ValidationResult } from './plan-format/validate';
export type { CompiledPlan, CompiledStep, PlanDocumentInput, RunPlanInput } from './plan-format/types';
export type {
  AgentDiagnostics,
  AgentSummary,
  Answer,
  CompensationRecord,
  ConsultationRecord,
  Diagnostics,
  PlanResult,
  PlanStatus,
  RunStatus,
  StepRecord,
  StepStatus,
  TokenUsage,
  WaitKind,
  Waiting,
  WorkerRecord,
  WorktreeRecord,
} from './protocol/definitions';
// What any Temporal client sends a run (docs/protocol.md), and the search attributes it sets.
export {
  CadrePlan,
  CadreStatus,
  CadreWorkerState,
  SEARCH_ATTRIBUTES,
  agentDiagnosticsQuery,
  answerSignal,
  answerUpdate,
  approveSignal,
  diagnosticsQuery,
  pauseSignal,
  pauseUpdate,
  resumeSignal,
  resumeUpdate,
} from './protocol/definitions';
export type { WorkerState } from './protocol/worker-state';
export { createCadreWorker, taskQueue, type CadreWorkerOptions } from './worker/worker';
export { startEmbedded, type Embedded } from './worker/embedded';
export { defineAgent, defineTool, type AgentMethod, type CadreTool, type ToolRunContext } from './tools/define';
// Run analytics (README, "Run analytics"): where workers record finished runs, and what `cadre stats` reads.
export { analyticsTarget, withAnalytics, type AnalyticsTarget } from './analytics/database';
export { estimateRun, readStats, type HumanWaitStats, type PlanStats, type RunEstimate, type StatsFilter, type StepStats } from './analytics/stats';
// A run's stream (docs/streaming.md): its events' schema, and the reader behind CadreClient.events().
export { STREAM_EVENT_TYPES, STREAM_TOPIC, TOOL_RESULT_PREVIEW_CHARS, streamEventSchema, type EventOf, type StreamEvent, type StreamEventAt, type StreamEventType } from './streaming/events';
export type { EventCallbacks, EventsOptions, StreamCursor } from './streaming/reader';
export { advance as advanceCursor } from './streaming/reader';
export { streamQuery, type StreamPage, type StreamRead } from './protocol/stream';
// The browser bridge (docs/streaming.md): a Node http handler speaking the AI SDK's UI message stream protocol to sessions.
export { createChatHandler, type ChatHandlerOptions } from './client/serve';
export { UiMessageStream, type CadreDataTypes } from './streaming/ui-message-stream';
