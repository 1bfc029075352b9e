/**
 * A plan sent as a document (by the `temporal` CLI, the Web UI, another SDK) is validated and
 * compiled here, on the worker, as `cadre run` does on the client: the workflow takes the result
 * from history and never loads the validator (zod stays out of its bundle).
 */
import path from 'node:path';
import { resolveInputs } from '../plan-format/inputs';
import { type PlanIssue, formatIssues } from '../plan-format/issues';
import { PlanError, parsePlanText } from '../plan-format/load';
import { checkStartPayload } from '../plan-format/payload';
import type { RunPlanInput } from '../plan-format/types';
import { validatePlan } from '../plan-format/validate';
import { planExampleIssues } from '../plan-format/approvals';

export interface PlanDocumentRequest {
  /** The plan as the JSON of a plan file, or the text of a YAML or JSON plan file. */
  document: unknown;
  inputs?: unknown;
  baseDir?: unknown;
}

export type PlanDocumentResult = { ok: true; start: RunPlanInput; warnings: PlanIssue[] } | { ok: false; message: string; issues: PlanIssue[] };

export async function compilePlanDocument(request: PlanDocumentRequest): Promise<PlanDocumentResult> {
  const refused = (issues: PlanIssue[]): PlanDocumentResult => ({ ok: false, message: `the plan document is not valid:\n${formatIssues(issues)}`, issues });
  const { inputs = {}, baseDir = process.cwd() } = request;
  const requestIssues: PlanIssue[] = [];
  if (typeof baseDir !== 'string' || !path.isAbsolute(baseDir)) requestIssues.push({ path: 'baseDir', message: 'must be an absolute path on the worker' });
  if (inputs === null || typeof inputs !== 'object' || Array.isArray(inputs)) requestIssues.push({ path: 'inputs', message: 'must be a map of input names to values' });
  if (requestIssues.length > 0) return refused(requestIssues);

  let raw = request.document;
  if (typeof raw === 'string') {
    try {
      raw = parsePlanText(raw, 'document.yaml');
    } catch (err) {
      if (err instanceof PlanError) return refused(err.issues.map((issue) => ({ ...issue, path: issue.path ? `document ${issue.path}` : 'document' })));
      throw err;
    }
  }
  const validated = validatePlan(raw, { baseDir: baseDir as string });
  if (!validated.ok) return refused(validated.issues);
  const plan = validated.plan;
  const examples = await planExampleIssues(plan);
  if (examples.length > 0) return refused(examples);
  const resolved = resolveInputs(plan, inputs as Record<string, unknown>);
  if (!resolved.ok) return refused(resolved.issues);
  const payload = checkStartPayload(plan, resolved.values, (name) => `inputs.${name}`);
  if (payload.problem) return refused([payload.problem]);
  return { ok: true, start: { plan, inputs: resolved.values }, warnings: validated.warnings };
}
