/**
 * A run started with the plan document (any Temporal client): the worker validates and compiles it
 * in an activity, so the workflow never loads the validator; a plan that does not validate ends
 * the run as failed with every problem and its path, never a loop of workflow-task failures.
 */
import { ApplicationFailure, patched, proxyActivities, proxyLocalActivities, setHandler, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { PlanDocumentInput, RunPlanInput } from '../../plan-format/types';
import { isoAt, nowMs } from '../common/clock';
import { describeFailure } from '../common/failures';
import { CadrePlan, type Diagnostics, diagnosticsQuery } from '../../protocol/definitions';

const VALIDATE = { startToCloseTimeout: '1m', retry: { maximumAttempts: 3 }, summary: 'validate the plan document' } as const;
/** Runs before PATCH_DOCUMENT_ACTIVITY validated in a local activity. */
const validatorHere = proxyLocalActivities<Activities>(VALIDATE);
// It beats: a worker that dies under it is known in seconds, not at its minute.
const validator = proxyActivities<Activities>({ ...VALIDATE, heartbeatTimeout: '10s' });

/**
 * A local activity's result may end the first workflow task when a run replays, though it came in
 * the second when the run ran (the task had ended while it worked): the run's patches, asked right
 * after, then found no marker in the task, and the replay failed (about half the runs a Python
 * client started). A regular activity's result always opens a workflow task of its own.
 */
const PATCH_DOCUMENT_ACTIVITY = 'plan-document-activity';

export function isPlanDocument(input: unknown): input is PlanDocumentInput {
  return typeof input === 'object' && input !== null && !Array.isArray(input) && 'document' in input;
}

/**
 * What a client that queries a run still being prepared sees (a plan document validated, a fork's
 * old run read): the run preparing, then its failure; the run's own query takes over once it starts.
 */
export function preparing(plan: string, note: string): { failed(reason: string): void } {
  const startedMs = nowMs();
  const record = (status: 'running' | 'failed', more: Partial<Diagnostics>): Diagnostics => ({
    plan,
    status,
    paused: false,
    startedAt: isoAt(startedMs),
    elapsedMs: nowMs() - startedMs,
    steps: [],
    waiting: [],
    errors: [],
    compensations: [],
    ...more,
  });
  setHandler(diagnosticsQuery, () => record('running', { note }));
  return {
    failed(reason) {
      const endedMs = nowMs();
      setHandler(diagnosticsQuery, () => record('failed', { endedAt: isoAt(endedMs), elapsedMs: endedMs - startedMs, reason }));
    },
  };
}

export async function compileDocument(input: PlanDocumentInput): Promise<RunPlanInput> {
  // A client may query as soon as it started the run: it sees the run validating, then its failure or its steps.
  const prepared = preparing(nameOf(input.document), 'the worker is validating the plan document');
  const request = { document: input.document, inputs: input.inputs, baseDir: input.baseDir };
  const result = await (patched(PATCH_DOCUMENT_ACTIVITY) ? validator : validatorHere).compilePlanDocument(request).catch((err: unknown) => {
    prepared.failed(`the worker could not validate the plan document: ${describeFailure(err).message}`);
    throw err;
  });
  if (!result.ok) {
    prepared.failed(result.message);
    throw ApplicationFailure.create({ type: 'InvalidPlan', message: result.message, details: [{ issues: result.issues }], nonRetryable: true });
  }
  // A client that starts a run by hand sets no search attributes: `cadre list --plan` finds it all the same.
  upsertSearchAttributes([{ key: CadrePlan, value: result.start.plan.name }]);
  return result.start;
}

function nameOf(document: unknown): string {
  const name = typeof document === 'object' && document !== null ? (document as { name?: unknown }).name : undefined;
  return typeof name === 'string' ? name.slice(0, 200) : '(plan document)';
}
