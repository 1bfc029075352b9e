/**
 * What `runPlan` starts from: a compiled plan as a client sent it (checked first), or one the worker
 * prepares in an activity: a plan document validated and compiled (plan-document.ts), a fork's old
 * run read and the fork planned (fork-start.ts). Workflow code.
 */
import type { ForkInput, PlanDocumentInput, RunPlanInput } from '../../plan-format/types';
import { checkInput } from '../../protocol/input-checks';
import { COMPILED_PLAN, CONTINUED_PLAN } from '../../protocol/plan-input';
import { type ContinuedPlanInput, isContinued } from './continue-as-new';
import { forkStart, isForkStart } from './fork-start';
import { compileDocument, isPlanDocument } from './plan-document';

export type StartInput = RunPlanInput | PlanDocumentInput | ForkInput | ContinuedPlanInput;

/** Whether the worker prepares the start in an activity (a plan document, a fork). */
export function isPrepared(input: StartInput): input is PlanDocumentInput | ForkInput {
  return isPlanDocument(input) || isForkStart(input);
}

export async function preparedStart(input: PlanDocumentInput | ForkInput): Promise<RunPlanInput> {
  if (isForkStart(input)) return forkStart(input);
  return { ...(await compileDocument(input)), ...(input.limits && { limits: input.limits }) };
}

/** A compiled plan (or a continued run) as sent, its shape checked: no await, so its commands stay as recorded. */
export function checkedStart(input: RunPlanInput | ContinuedPlanInput): RunPlanInput | ContinuedPlanInput {
  checkInput('runPlan', input, isContinued(input) ? CONTINUED_PLAN : COMPILED_PLAN);
  return input;
}
