/**
 * `cadre validate --preflight` and `cadre run`'s check before it starts: the plan (E1xx), what it
 * needs where it runs (E2xx), and the server (E3xx), every problem with its stable code.
 */
import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { resolveInputs } from '../plan-format/inputs';
import { PlanError, loadPlanWithWarnings } from '../plan-format/load';
import type { CompiledPlan } from '../plan-format/types';
import { SEARCH_ATTRIBUTES } from '../protocol/definitions';
import { problem, type PreflightProblem } from './codes';
import { type EnvironmentProbe, environmentProblems, systemProbe } from './environment';

export interface PlanCheck {
  plan?: CompiledPlan;
  inputs?: Record<string, unknown>;
  problems: PreflightProblem[];
}

/** E1xx and E2xx: the plan file, its inputs, and what it needs on this machine. */
export async function checkPlan(file: string, baseDir: string, given: Record<string, unknown>, probe: EnvironmentProbe = systemProbe): Promise<PlanCheck> {
  let plan: CompiledPlan;
  try {
    plan = (await loadPlanWithWarnings(file, baseDir)).plan;
  } catch (err) {
    if (!(err instanceof PlanError)) throw err;
    return { problems: err.issues.map((issue) => problem(err.stage === 'read' ? 'CADRE-E101' : 'CADRE-E102', issue.path, issue.message)) };
  }
  const resolved = resolveInputs(plan, given);
  const problems: PreflightProblem[] = resolved.ok ? [] : resolved.issues.map((issue) => problem('CADRE-E103', issue.path, issue.message));
  problems.push(...(await environmentProblems(plan, probe)));
  return { plan, ...(resolved.ok && { inputs: resolved.values }), problems };
}

/** E3xx: the namespace has cadre's search attributes, and a worker polls the task queue. */
export async function checkServer(connection: Connection, namespace: string, taskQueue: string): Promise<PreflightProblem[]> {
  const problems: PreflightProblem[] = [];
  const { customAttributes, systemAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  const missing = SEARCH_ATTRIBUTES.map((k) => k.name).filter((name) => !(name in { ...customAttributes, ...systemAttributes }));
  if (missing.length > 0) problems.push(problem('CADRE-E302', '', `namespace "${namespace}" lacks ${missing.join(', ')}: run \`cadre setup\` or start \`cadre worker\``));
  problems.push(...(await checkWorkers(connection, namespace, taskQueue)));
  return problems;
}

/** E303 alone: `cadre run` warns with it (the start itself reports missing search attributes). */
export async function checkWorkers(connection: Connection, namespace: string, taskQueue: string): Promise<PreflightProblem[]> {
  const problems: PreflightProblem[] = [];
  const { pollers } = await connection.workflowService.describeTaskQueue({
    namespace,
    taskQueue: { name: taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  if (!pollers || pollers.length === 0) problems.push(problem('CADRE-E303', '', `no worker polls task queue "${taskQueue}" in namespace "${namespace}": start \`cadre worker\` or \`cadre dev\` (a run started now waits for one)`));
  return problems;
}
