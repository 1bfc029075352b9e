/**
 * Team roles as data: YAML or JSON files in the built-in `roles/` folder, then in user folders
 * (`./roles`, CADRE_ROLES_DIR). A user file with a built-in's name replaces it; a new name adds a role.
 */
import { existsSync, realpathSync } from 'node:fs';
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { editDistance } from '../plan-format/checker';
import { formatPath } from '../plan-format/issues';
import { PlanError, parsePlanText } from '../plan-format/load';
import { formatBytes, shorten } from '../plan-format/text';
import { CUSTOM_TOOL, TOOL_NAMES, isToolName } from '../plan-format/tools';
import { approvalExampleIssues, approvalsSchema, compileApprovals } from '../plan-format/approvals';
import { agentBudget } from '../plan-format/fields';
import { packageRoot } from '../package-root';
import { roleSandboxSchema } from '../sandbox/schema';

export const ROLE_NAME = /^[a-z][a-z0-9-]{0,62}[a-z0-9]$|^[a-z]$/;
/** A role is a page of text; anything bigger is a mistake (or not a role file). */
export const MAX_ROLE_FILE_BYTES = 256 * 1024;
const ROLE_FILE = /^(.+)\.(ya?ml|json)$/;

/** A zod error that tells a missing field from a wrong one. */
const expected = (what: string, shape: string) => (issue: { input?: unknown }) => (issue.input === undefined ? `${what} is missing` : `${what} must be ${shape}`);
const text = (what: string, max: number) =>
  z
    .string({ error: expected(what, 'text') })
    .min(1, `${what} is empty`)
    .max(max, { error: (issue) => `${what} is ${String((issue.input as string).length)} characters long; use at most ${max}` });
const oneLine = (what: string, max: number) => text(what, max).refine((s) => !/[\r\n]/.test(s), `${what} must be one line`);
const list = <T extends z.ZodType>(what: string, item: T, min: number, max: number) =>
  z
    .array(item, { error: expected(what, 'a list') })
    .min(min, `${what} needs at least ${min} ${min === 1 ? 'entry' : 'entries'}`)
    .max(max, `${what} holds at most ${max} entries`);

const knownTool = (name: string) => isToolName(name) || CUSTOM_TOOL.test(name);
const tool = z.string({ error: 'a tool is a name such as fs.read' }).refine(knownTool, {
  error: (issue) =>
    `unknown tool "${shorten(String(issue.input))}" (known tools: ${TOOL_NAMES.join(', ')}; the worker's own: ts:<name>, mcp:<server>/<tool>, mcp:<server>/*)`,
});

// The same approvals as an agent step's, so a role's can be handed over as is.
const approvals = approvalsSchema;

export const roleSchema = z.strictObject({
  name: z.string({ error: expected('name', 'text') }).regex(ROLE_NAME, 'a role name is lowercase letters, digits and "-", starting with a letter, at most 64 characters'),
  description: oneLine('description', 300),
  /** Short phrases the router matches tasks against. */
  competencies: list('competencies', oneLine('a competency', 80), 1, 50),
  system: text('system', 16_000),
  tools: list('tools', tool, 0, 64),
  authority: list('authority', oneLine('an authority entry', 300), 0, 30),
  consultWhen: list('consultWhen', oneLine('a consultWhen entry', 300), 0, 30),
  approvals: approvals.optional(),
  /** Narrows the run's sandbox for this role's agents: fewer variables and hosts, smaller limits. */
  sandbox: roleSandboxSchema.optional(),
  model: z.string().min(3).max(1000).regex(/^[a-z-]+:\S/, 'a model is provider:model, e.g. openai:gpt-4o-mini').optional(),
  /** Narrows the budget of each of this role's agents (its own turns): never more than the step gives (docs/budgets.md). */
  budget: agentBudget.optional(),
});

export type RoleFile = z.infer<typeof roleSchema>;

export interface Role extends RoleFile {
  /** The file the role was read from (absolute). */
  source: string;
  /** The file of the role this one replaced, when a user file took a built-in's (or an earlier user file's) name. */
  overrides?: string;
}

export interface RoleProblem {
  file: string;
  path: string;
  message: string;
}

/** Every problem of every role file, one per line: `roles/x.yaml: tools[2]: unknown tool "fs.delete"`. */
export class RoleError extends Error {
  constructor(readonly problems: RoleProblem[]) {
    super(problems.map((p) => [shown(p.file), p.path, p.message].filter(Boolean).join(': ')).join('\n'));
    this.name = 'RoleError';
  }
}

const FIELDS = Object.keys(roleSchema.shape);


export const BUILTIN_ROLES_DIR = path.join(packageRoot(), 'roles');

/** Whether a role's `source` (or `overrides`) is a file cadre ships. */
export function isBuiltinSource(file: string): boolean {
  return path.dirname(file) === realPath(BUILTIN_ROLES_DIR);
}

/** The user folders read after the built-ins: `./roles` if present, then each CADRE_ROLES_DIR entry. */
export function userRoleDirs(cwd = process.cwd(), env: NodeJS.ProcessEnv = process.env): string[] {
  const local = path.resolve(cwd, 'roles');
  const fromEnv = (env.CADRE_ROLES_DIR ?? '').split(path.delimiter).filter(Boolean).map((dir) => path.resolve(cwd, dir));
  return [...(existsSync(local) ? [local] : []), ...fromEnv];
}

/** The built-in roles, then those of `dirs` (default: userRoleDirs()), later names replacing earlier ones; sorted by name. */
export async function loadRoles(options: { dirs?: string[] } = {}): Promise<Role[]> {
  const builtin = realPath(BUILTIN_ROLES_DIR);
  // Running cadre in its own checkout makes ./roles the built-in folder: reading it twice would override each role with itself.
  const dirs = unique((options.dirs ?? userRoleDirs()).map((dir) => realPath(path.resolve(dir)))).filter((dir) => dir !== builtin);
  const problems: RoleProblem[] = [];
  const roles = new Map<string, Role>();
  for (const dir of [builtin, ...dirs]) {
    for (const role of await loadDir(dir, problems)) {
      const replaced = roles.get(role.name);
      roles.set(role.name, replaced ? { ...role, overrides: replaced.source } : role);
    }
  }
  if (problems.length > 0) throw new RoleError(problems);
  return [...roles.values()].sort((a, b) => a.name.localeCompare(b.name));
}

async function loadDir(dir: string, problems: RoleProblem[]): Promise<Role[]> {
  let names: string[];
  try {
    if (!(await stat(dir)).isDirectory()) throw Object.assign(new Error('not a folder'), { code: 'ENOTDIR' });
    names = (await readdir(dir)).sort();
  } catch (err) {
    problems.push({ file: dir, path: '', message: `cannot read the roles folder: ${readError(err)}` });
    return [];
  }
  const roles: Role[] = [];
  const stems = new Map<string, string>();
  // Dot files are OS and editor litter (.DS_Store, .gitkeep, swap files), never roles.
  for (const name of names.filter((n) => !n.startsWith('.'))) {
    const file = path.join(dir, name);
    const stem = ROLE_FILE.exec(name)?.[1];
    if (stem === undefined) {
      problems.push({ file, path: '', message: 'not a role file: a roles folder holds only <name>.yaml, <name>.yml or <name>.json' });
      continue;
    }
    const twin = stems.get(stem);
    if (twin !== undefined) {
      problems.push({ file, path: '', message: `role "${stem}" is also defined by ${path.basename(twin)} in the same folder: keep one` });
      continue;
    }
    stems.set(stem, file);
    const role = await loadFile(file, stem, problems);
    if (role) roles.push(role);
  }
  return roles;
}

async function loadFile(file: string, stem: string, problems: RoleProblem[]): Promise<Role | undefined> {
  const report = (issues: { path: string; message: string }[]) => {
    problems.push(...issues.map((issue) => ({ file, ...issue })));
    return undefined;
  };
  let raw: unknown;
  try {
    const info = await stat(file);
    if (!info.isFile()) return report([{ path: '', message: 'not a file' }]);
    if (info.size > MAX_ROLE_FILE_BYTES) return report([{ path: '', message: `the file is ${formatBytes(info.size)}; a role file holds at most ${formatBytes(MAX_ROLE_FILE_BYTES)}` }]);
    raw = parsePlanText(await readFile(file, 'utf8'), file);
  } catch (err) {
    if (err instanceof PlanError) return report(err.issues);
    return report([{ path: '', message: `cannot read it: ${readError(err)}` }]);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    return report([{ path: '', message: `a role is a map with ${FIELDS.slice(0, 7).join(', ')}; this file holds ${raw == null ? 'nothing' : Array.isArray(raw) ? 'a list' : `a ${typeof raw}`}` }]);
  }
  const parsed = roleSchema.safeParse(raw);
  if (!parsed.success) return report(parsed.error.issues.flatMap(shapeIssue));
  const issues = roleIssues(parsed.data, stem);
  if (issues.length > 0) return report(issues);
  // Command rules in their object form, their examples checked: a role file is a plan's approvals.
  const approvals = parsed.data.approvals && compileApprovals(parsed.data.approvals);
  const examples = await approvalExampleIssues(approvals, 'approvals');
  if (examples.length > 0) return report(examples);
  return { ...parsed.data, ...(approvals && { approvals }), source: file };
}

/** Checks across fields, once the shape is right. */
function roleIssues(role: RoleFile, stem: string): { path: string; message: string }[] {
  const issues: { path: string; message: string }[] = [];
  if (role.name !== stem) {
    issues.push({ path: 'name', message: `"${role.name}" differs from the file name "${stem}": a role file is named after its role (${role.name}.yaml)` });
  }
  const repeats = (field: 'tools' | 'competencies', key: (s: string) => string) => {
    const seen = new Set<string>();
    role[field].forEach((item, i) => {
      if (seen.has(key(item))) issues.push({ path: formatPath([field, i]), message: `"${shorten(item)}" is listed twice` });
      seen.add(key(item));
    });
  };
  repeats('tools', (s) => s);
  repeats('competencies', (s) => s.toLowerCase());
  // As for agent steps (plan-format/checker.ts): approvals name the role's own tools, and only shell takes command rules.
  for (const [name, policy] of Object.entries(role.approvals ?? {})) {
    const server = /^mcp:[^/]+\//.exec(name)?.[0];
    const at = formatPath(['approvals', name]);
    if (!role.tools.includes(name) && !(server && role.tools.includes(`${server}*`))) {
      issues.push({ path: at, message: `"${shorten(name)}" is not one of the role's tools (${role.tools.join(', ') || 'none'})` });
    } else if (typeof policy === 'object' && name !== 'shell') issues.push({ path: at, message: 'only shell takes command rules; other tools take allow, deny or ask' });
  }
  return issues;
}

/** A zod issue at its path; an unknown field named on its own, with the field it may have meant. */
function shapeIssue(issue: z.core.$ZodIssue): { path: string; message: string }[] {
  if (issue.code !== 'unrecognized_keys') return [{ path: formatPath(issue.path), message: issue.message }];
  return issue.keys.map((key) => {
    const meant = FIELDS.find((name) => name.toLowerCase() === key.toLowerCase() || (key.length > 3 && key.length < 40 && editDistance(name, key) <= 2));
    return { path: formatPath([...issue.path, shorten(key, 40)]), message: `unknown field "${shorten(key)}" (${meant ? `did you mean "${meant}"?` : `fields: ${FIELDS.join(', ')}`})` };
  });
}

function readError(err: unknown): string {
  const code = (err as { code?: string }).code;
  const known: Record<string, string> = { ENOENT: 'no such file or folder', EACCES: 'permission denied', ENOTDIR: 'not a folder', EISDIR: 'it is a folder' };
  return (code && known[code]) ?? (err instanceof Error ? err.message.split('\n')[0] : String(err));
}

/** Paths under the current folder as typed there (`roles/x.yaml`), others in full. */
export function shown(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return relative && !relative.startsWith('..') && !path.isAbsolute(relative) ? relative : file;
}

function realPath(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return dir; // A missing folder is reported when it is read.
  }
}

function unique(items: string[]): string[] {
  return [...new Set(items)];
}
