/** cadre's public API: the typed client, plan loading and validation, and the shapes they use. */
export { CadreClient, CadreError, UsageError, defaultWorkflowId, isFinal, type ConnectOptions, type RunSummary, type StartOptions } from './client/client';
export { PlanError, loadPlan, parsePlanText } from './spec/load';
export { formatIssues, validatePlan, type PlanIssue, type ValidationResult } from './spec/validate';
export type { CompiledPlan, CompiledStep, PlanDocumentInput, RunPlanInput } from './spec/types';
export type { AgentDiagnostics, AgentSummary, Answer, Diagnostics, PlanStatus, RunStatus, StepRecord, StepStatus, TokenUsage, Waiting } from './workflows/definitions';
export { createCadreWorker, taskQueue, type CadreWorkerOptions } from './worker/worker';
export { startEmbedded, type Embedded } from './worker/embedded';
export { defineAgent, defineTool, type AgentMethod, type CadreTool, type ToolRunContext } from './tools/define';
