/**
 * Reads a plan file (YAML or JSON) and validates it. Whatever the file holds (binary, alias
 * bombs, nesting that overflows a parser, duplicate keys), the result is a PlanError with
 * lines or paths, never a crash.
 */
import { open } from 'node:fs/promises';
import YAML from 'yaml';
import { sortIssues } from './issues';
import { duplicateJsonKey } from './json-keys';
import { MAX_NESTING_DEPTH } from './limits';
import { formatBytes } from './text';
import type { CompiledPlan } from './types';
import { type PlanIssue, validatePlan } from './validate';
import { planExampleIssues } from './approvals';
import { PlanError } from './plan-error';

export { PlanError } from './plan-error';

const READ_ERRORS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EISDIR: 'it is a directory',
};

/** Far above what Temporal accepts (2 MiB of plan), so the validator can still say which parts are too big. */
export const MAX_PLAN_FILE_BYTES = 16 * 1024 * 1024;
/** YAML aliases (`*name`) expanded per file: the yaml library's default, which stops "billion laughs" files. */
const MAX_ALIAS_COUNT = 100;

export function parsePlanText(text: string, file: string): unknown {
  return file.endsWith('.json') ? parseJson(text, file) : parseYaml(text, file);
}

function parseJson(text: string, file: string): unknown {
  const body = text.replace(/^\uFEFF/, '');
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (err) {
    throw new PlanError(file, [{ path: '', message: `not valid JSON: ${firstLine(err)}` }]);
  }
  const duplicate = duplicateJsonKey(body);
  if (duplicate) {
    throw new PlanError(file, [{ path: `line ${duplicate.line}`, message: `duplicate key "${duplicate.key}": JSON keeps only the last; remove one` }]);
  }
  return value;
}

function parseYaml(text: string, file: string): unknown {
  let doc: YAML.Document.Parsed;
  try {
    doc = YAML.parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  } catch (err) {
    throw new PlanError(file, [{ path: '', message: `cannot parse the YAML: ${firstLine(err)}` }]);
  }
  // Warnings (such as unknown tags) mean the YAML would not be read as written.
  const problems = [...doc.errors, ...doc.warnings].map((e) => ({ path: `line ${e.linePos?.[0].line ?? '?'}`, message: yamlMessage(e.message) }));
  if (problems.length > 0) throw new PlanError(file, sortIssues(problems));
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    const line = firstAliasLine(text);
    const message = /alias/i.test(firstLine(err))
      ? `YAML aliases (*name) expand to too much (more than ${MAX_ALIAS_COUNT} copies): write the values out`
      : yamlMessage(firstLine(err));
    throw new PlanError(file, [{ path: line ? `line ${line}` : '', message }]);
  }
}

function yamlMessage(message: string): string {
  const first = message.split('\n')[0];
  if (/call stack/i.test(first)) return `nested too deeply for the YAML parser: plans nest values at most ${MAX_NESTING_DEPTH} levels`;
  return first;
}

/** The line of the first alias that names an anchor of the file, for alias errors the parser reports without one. */
function firstAliasLine(text: string): number | undefined {
  const anchors = new Set([...text.matchAll(/&([^\s,[\]{}]+)/g)].map((m) => m[1]));
  for (const match of text.matchAll(/(^|[\s,[{:-])\*([^\s,[\]{}]+)/gm)) {
    if (anchors.has(match[2])) return text.slice(0, match.index + match[1].length).split('\n').length;
  }
  return undefined;
}

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0].slice(0, 300);
}

/** The file's text, refused past MAX_PLAN_FILE_BYTES while reading: /dev/zero or a pipe that never ends are no exception. */
async function readCapped(file: string): Promise<string> {
  const handle = await open(file, 'r');
  try {
    const chunks: Buffer[] = [];
    let total = 0;
    for (;;) {
      const { bytesRead, buffer } = await handle.read(Buffer.alloc(READ_CHUNK_BYTES), 0, READ_CHUNK_BYTES, null);
      if (bytesRead === 0) return Buffer.concat(chunks).toString('utf8');
      total += bytesRead;
      if (total > MAX_PLAN_FILE_BYTES) {
        throw new PlanError(file, [{ path: '', message: `the file is over ${formatBytes(MAX_PLAN_FILE_BYTES)}; Temporal takes 2 MiB of plan: keep data in separate files` }]);
      }
      chunks.push(buffer.subarray(0, bytesRead));
    }
  } finally {
    await handle.close();
  }
}

const READ_CHUNK_BYTES = 1024 * 1024;

/** A plan file, validated: the compiled plan and the warnings (history estimate, payload size). */
export async function loadPlanWithWarnings(file: string, baseDir: string): Promise<{ plan: CompiledPlan; warnings: PlanIssue[] }> {
  let text: string;
  try {
    text = await readCapped(file);
  } catch (err) {
    if (err instanceof PlanError) throw err;
    const code = (err as NodeJS.ErrnoException).code ?? '';
    const reason = READ_ERRORS[code] ?? (err as Error).message;
    throw new PlanError(file, [{ path: '', message: `cannot read the plan: ${reason}` }]);
  }
  const result = validatePlan(parsePlanText(text, file), { baseDir });
  if (!result.ok) throw new PlanError(file, result.issues, 'validate');
  const examples = await planExampleIssues(result.plan);
  if (examples.length > 0) throw new PlanError(file, examples, 'validate');
  return { plan: result.plan, warnings: result.warnings };
}

export async function loadPlan(file: string, baseDir: string): Promise<CompiledPlan> {
  return (await loadPlanWithWarnings(file, baseDir)).plan;
}
