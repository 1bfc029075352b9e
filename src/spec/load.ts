/** Reads a plan file (YAML or JSON) and validates it. */
import { readFile } from 'node:fs/promises';
import YAML from 'yaml';
import type { CompiledPlan } from './types';
import { type PlanIssue, validatePlan } from './validate';

export class PlanError extends Error {
  constructor(
    readonly file: string,
    readonly issues: PlanIssue[],
  ) {
    super(`${file}: ${issues.length} problem${issues.length === 1 ? '' : 's'}`);
  }
}

const READ_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'it is a directory',
};

export function parsePlanText(text: string, file: string): unknown {
  if (file.endsWith('.json')) {
    try {
      return JSON.parse(text);
    } catch (err) {
      throw new PlanError(file, [{ path: '', message: `not valid JSON: ${(err as Error).message}` }]);
    }
  }
  const doc = YAML.parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0) {
    throw new PlanError(
      file,
      doc.errors.map((e) => ({ path: `line ${e.linePos?.[0].line ?? '?'}`, message: e.message.split('\n')[0] })),
    );
  }
  return doc.toJS();
}

export async function loadPlan(file: string, baseDir: string): Promise<CompiledPlan> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    const reason = READ_ERRORS[code] ?? (err as Error).message;
    throw new PlanError(file, [{ path: '', message: `cannot read the plan: ${reason}` }]);
  }
  const result = validatePlan(parsePlanText(text, file), { baseDir });
  if (!result.ok) throw new PlanError(file, result.issues);
  return result.plan;
}
