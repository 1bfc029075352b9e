/** Run ids given by users, checked before they reach Temporal (whose own errors would leak SDK text). */
import { createHash } from 'node:crypto';
import type { WorkflowClientInterceptor, WorkflowExecution } from '@temporalio/client';
import type { CompiledPlan } from '../plan-format/types';
import { UsageError } from '../errors/cadre-error';

/** Temporal's default limit on ids (the server's `limit.maxIDLength`). */
export const MAX_WORKFLOW_ID_BYTES = 1000;

export function checkWorkflowId(id: string): void {
  if (id.length === 0) throw new UsageError('the run id is empty');
  const bytes = Buffer.byteLength(id, 'utf8');
  if (bytes > MAX_WORKFLOW_ID_BYTES) throw new UsageError(`the run id is ${bytes} bytes long; Temporal takes at most ${MAX_WORKFLOW_ID_BYTES}`);
  const control = /\p{Cc}/u.exec(id);
  if (control) throw new UsageError(`the run id has a control character (${JSON.stringify(control[0])} at position ${control.index})`);
}

function checkExecution<I extends { workflowExecution: WorkflowExecution }, O>(input: I, next: (input: I) => Promise<O>): Promise<O> {
  checkWorkflowId(input.workflowExecution.workflowId);
  return next(input);
}

/** Checks the id of every client call that names a run (starting one included) before the request leaves. */
export const workflowIdInterceptor: WorkflowClientInterceptor = {
  startWithDetails(input, next) {
    checkWorkflowId(input.options.workflowId);
    return next(input);
  },
  signalWithStart(input, next) {
    checkWorkflowId(input.options.workflowId);
    return next(input);
  },
  describe: checkExecution,
  query: checkExecution,
  signal: checkExecution,
  startUpdate: checkExecution,
  cancel: checkExecution,
  terminate: checkExecution,
};

/** A plan run's id when none is given: the same plan and inputs give the same id, so a retried start does not run it twice. */
export function defaultWorkflowId(plan: CompiledPlan, inputs: Record<string, unknown>): string {
  const hash = createHash('sha256').update(JSON.stringify({ plan, inputs })).digest('hex').slice(0, 10);
  return `plan-${plan.name}-${hash}`;
}
