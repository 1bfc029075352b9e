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

export const toolParams = {
  shell: z.strictObject({
    command: z.string().min(1),
    cwd: z.string().optional(),
    env: z.record(z.string(), z.string()).optional(),
  }),
  'fs.read': z.strictObject({ path: z.string().min(1) }),
  'fs.write': z.strictObject({
    path: z.string().min(1),
    content: z.unknown().refine((v) => v !== undefined, { message: 'content is required' }),
    append: z.boolean().optional(),
  }),
  'http.request': z.strictObject({
    url: z.url(),
    method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD']).optional(),
    headers: z.record(z.string(), z.string()).optional(),
    body: z.unknown().optional(),
  }),
  sleep: z.strictObject({ duration }),
} as const;

export type ToolName = keyof typeof toolParams;
export const TOOL_NAMES = Object.keys(toolParams) as ToolName[];

export function isToolName(name: string): name is ToolName {
  return Object.prototype.hasOwnProperty.call(toolParams, name);
}

export type ShellParams = z.infer<(typeof toolParams)['shell']>;
export type FsReadParams = z.infer<(typeof toolParams)['fs.read']>;
export type FsWriteParams = z.infer<(typeof toolParams)['fs.write']>;
export type HttpRequestParams = z.infer<(typeof toolParams)['http.request']>;
