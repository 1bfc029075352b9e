/**
 * The built-in tools and the zod schemas of their parameters. The validator checks
 * literal parameters against these before a run starts; activities check the
 * resolved parameters again before doing anything.
 */
import { z } from 'zod';
import { durationMs, isDuration } from './duration';
import { checkDurationMs } from './limits';

const duration = z
  .string()
  .refine(isDuration, { message: 'bad duration: use a number with ms, s, m, h or d (e.g. 30s)' })
  .superRefine((text, ctx) => {
    if (!isDuration(text)) return;
    for (const problem of checkDurationMs(durationMs(text), 'duration', { allowZero: true })) ctx.addIssue({ code: 'custom', message: problem.message });
  });

/** Linux refuses an argument or environment string ("NAME=value") of this many bytes, its NUL included (MAX_ARG_STRLEN). */
export const MAX_ARG_STRLEN = 128 * 1024;
/** What exec takes in arguments and environment together with Linux's default 8 MiB stack (`getconf ARG_MAX`). */
export const ARG_MAX = 2 * 1024 * 1024;

/** Bytes exec needs for these argument or environment strings: each one's text, its NUL and its pointer. */
export function execBytes(strings: Iterable<string>): number {
  let total = 0;
  for (const s of strings) total += Buffer.byteLength(s) + 1 + 8;
  return total;
}

/** An environment as exec sees it: "NAME=value" strings. */
export function envStrings(env: Record<string, string | undefined> = {}): string[] {
  return Object.entries(env).flatMap(([name, value]) => (value === undefined ? [] : [`${name}=${value}`]));
}

// C strings end at a NUL byte: a command, environment or path with one would be silently cut.
const withoutNul = [(s: string) => !s.includes('\0'), { message: 'contains a NUL byte, which commands, environment variables and paths cannot hold' }] as const;
const workspacePath = z.string().min(1).refine(...withoutNul);
const identifier = z.string().regex(/^[A-Za-z_$][A-Za-z0-9_$]*$/, 'must be an identifier (a name in the code)');
const depth = z.number().int().min(1).max(20);

/** Environment names and sizes exec would refuse (E2BIG), reported on the field to blame. */
function checkExec(params: { command: string; env?: Record<string, string> }, ctx: z.RefinementCtx): void {
  for (const name of Object.keys(params.env ?? {})) {
    if (!/^[^=\0]+$/.test(name)) ctx.addIssue({ code: 'custom', path: ['env', name], message: 'an environment variable name must be non-empty, without "=" or NUL bytes' });
  }
  const bytes = Buffer.byteLength(params.command);
  if (bytes >= MAX_ARG_STRLEN) {
    ctx.addIssue({ code: 'custom', path: ['command'], message: `is ${bytes} bytes; a command may have at most ${MAX_ARG_STRLEN - 1} (put a long script in a file)` });
  }
  for (const entry of envStrings(params.env)) {
    const size = Buffer.byteLength(entry);
    if (size >= MAX_ARG_STRLEN) {
      const name = entry.slice(0, entry.indexOf('='));
      ctx.addIssue({ code: 'custom', path: ['env', name], message: `is ${size} bytes with its name; one environment variable may have at most ${MAX_ARG_STRLEN - 1} (pass big data in a file)` });
    }
  }
  const total = execBytes([params.command, ...envStrings(params.env)]);
  if (total > ARG_MAX) {
    ctx.addIssue({ code: 'custom', path: ['env'], message: `command and environment need ${total} bytes; a process can be started with at most ${ARG_MAX} (pass big data in a file)` });
  }
}

export const toolParams = {
  shell: z
    .strictObject({
      command: z.string().min(1).refine(...withoutNul),
      cwd: z.string().refine(...withoutNul).optional(),
      env: z.record(z.string(), z.string().refine(...withoutNul)).optional(),
    })
    .superRefine(checkExec),
  'fs.read': z
    .strictObject({ path: workspacePath, from: z.int().min(1).optional(), to: z.int().min(1).optional() })
    .refine((p) => p.from === undefined || p.to === undefined || p.from <= p.to, { path: ['to'], message: 'must not be before from' }),
  'fs.write': z.strictObject({
    path: workspacePath,
    content: z.unknown().refine((v) => v !== undefined, { message: 'content is required' }),
    append: z.boolean().optional(),
  }),
  'fs.edit': z.strictObject({
    path: workspacePath,
    old_text: z.string().min(1, 'old_text must be the exact text to replace, copied from the file'),
    new_text: z.string(),
    all: z.boolean().optional(),
  }),
  'http.request': z.strictObject({
    url: z.url(),
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']).optional(),
    headers: z.record(z.string(), z.string()).optional(),
    body: z.unknown().optional(),
  }),
  sleep: z.strictObject({ duration }),
  // Git in the step's worktree (src/git): status, commit, merge of its branch back.
  'git.status': z.strictObject({}),
  'git.commit': z.strictObject({ message: z.string().min(1).max(64 * 1024).refine(...withoutNul), all: z.boolean().optional() }),
  'git.merge': z.strictObject({ into: z.string().min(1).max(250).optional() }),
  'git.reset': z.strictObject({}),
  // Code navigation on the TypeScript compiler's own analysis (activities/tools/code).
  'code.navigate_imports': z.strictObject({ file: workspacePath, symbol: identifier, maxDepth: depth.optional() }),
  'code.find_implementations': z.strictObject({ typeName: identifier, dir: workspacePath.optional() }),
  'code.find_references': z.strictObject({ file: workspacePath, symbol: identifier }),
  'code.trace_data_flow': z.strictObject({
    symbol: identifier,
    file: workspacePath.optional(),
    direction: z.enum(['forward', 'backward', 'both']).optional(),
    maxDepth: depth.optional(),
  }),
  // Literal text only: a user's regular expression could hang the worker's event loop (ReDoS).
  'code.search': z.strictObject({ text: z.string().min(1).max(1000).refine(...withoutNul), ignoreCase: z.boolean().optional(), dir: workspacePath.optional() }),
} as const;

export type ToolName = keyof typeof toolParams;
export const TOOL_NAMES = Object.keys(toolParams) as ToolName[];

export function isToolName(name: string): name is ToolName {
  return Object.prototype.hasOwnProperty.call(toolParams, name);
}

export type ShellParams = z.infer<(typeof toolParams)['shell']>;
export type FsReadParams = z.infer<(typeof toolParams)['fs.read']>;
export type FsWriteParams = z.infer<(typeof toolParams)['fs.write']>;
export type FsEditParams = z.infer<(typeof toolParams)['fs.edit']>;
export type HttpRequestParams = z.infer<(typeof toolParams)['http.request']>;
export type CodeNavigateImportsParams = z.infer<(typeof toolParams)['code.navigate_imports']>;
export type CodeFindImplementationsParams = z.infer<(typeof toolParams)['code.find_implementations']>;
export type CodeFindReferencesParams = z.infer<(typeof toolParams)['code.find_references']>;
export type CodeTraceDataFlowParams = z.infer<(typeof toolParams)['code.trace_data_flow']>;
export type CodeSearchParams = z.infer<(typeof toolParams)['code.search']>;
export type GitCommitParams = z.infer<(typeof toolParams)['git.commit']>;
export type GitMergeParams = z.infer<(typeof toolParams)['git.merge']>;

/** Tools the worker brings (cadre.config.yaml): `ts:<name>` (defineTool) and `mcp:<server>/<tool>` or `mcp:<server>/*`. */
export const CUSTOM_TOOL = /^(ts:[A-Za-z][A-Za-z0-9_-]{0,63}(\.[A-Za-z][A-Za-z0-9_-]{0,63})?|mcp:[a-z0-9][a-z0-9_-]{0,31}\/(\*|[A-Za-z0-9_.-]{1,128}))$/;
