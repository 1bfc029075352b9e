/**
 * The `sandbox:` section as people write it, in a plan and in the worker's cadre.config.yaml:
 * `sandbox: none`, or `{ env, read, limits }`. Compiled to a SandboxSpec.
 */
import path from 'node:path';
import { z } from 'zod';
import { NO_EGRESS, egressSchema, toEgressPolicy } from '../egress/policy';
import type { ResourceLimits, SandboxNarrowing, SandboxSpec } from './profile';

const UNITS: Record<string, number> = { '': 1, b: 1, k: 1e3, kb: 1e3, kib: 1024, m: 1e6, mb: 1e6, mib: 1024 ** 2, g: 1e9, gb: 1e9, gib: 1024 ** 3, t: 1e12, tb: 1e12, tib: 1024 ** 4 };

/** `512MiB`, `2GB`, `1048576`: bytes, or undefined when the text is not a size. */
export function parseByteSize(text: string | number): number | undefined {
  if (typeof text === 'number') return Number.isSafeInteger(text) && text > 0 ? text : undefined;
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text);
  const unit = match ? UNITS[match[2].toLowerCase()] : undefined;
  if (!match || unit === undefined) return undefined;
  const bytes = Math.round(Number(match[1]) * unit);
  return bytes > 0 && Number.isSafeInteger(bytes) ? bytes : undefined;
}

const byteSize = z.union([z.string(), z.number()]).transform((value, ctx) => {
  const bytes = parseByteSize(value);
  if (bytes === undefined) {
    ctx.addIssue({ code: 'custom', message: `"${String(value).slice(0, 40)}" is not a size: write bytes or a number with KiB, MiB, GiB (e.g. 512MiB)` });
    return z.NEVER;
  }
  return bytes;
});

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be the name of an environment variable').max(128);
const readPath = z
  .string()
  .min(1)
  .max(4096)
  .refine((p) => path.isAbsolute(p) && !p.includes('\0'), 'must be an absolute path');

/** A sandbox's `limits`, as plans, roles and MCP servers write them (each the smaller of its own and the worker's). */
export const limitsSchema = z.strictObject({
  processes: z.int().min(8).max(65_536).optional(),
  memory: byteSize.optional(),
  fileSize: byteSize.optional(),
  tmp: byteSize.optional(),
  openFiles: z.int().min(16).max(1_048_576).optional(),
});

export const sandboxSchema = z.union(
  [
    z.literal('none'),
    z.strictObject({
      mode: z.enum(['bubblewrap', 'none']).optional(),
      /** Worker environment variables tools get, besides PATH, LANG, TERM and the like. */
      env: z.array(envName).max(64).optional(),
      /** Extra read-only paths (absolute). */
      read: z.array(readPath).max(64).optional(),
      limits: limitsSchema.optional(),
    }),
  ],
  { error: 'sandbox is "none" or { env, read, limits } (see docs/security.md)' },
);

export type SandboxInput = z.infer<typeof sandboxSchema>;

/**
 * A role file's `sandbox:`: it narrows the run's, never widens it (`env` and `egress` keep only
 * what the run also passes, limits take the smaller; no `none`, no `read`). Parsed to a narrowing.
 */
export const roleSandboxSchema = z
  .strictObject(
    {
      env: z.array(envName).max(64).optional(),
      egress: z.union([z.literal('none'), egressSchema], { error: 'egress is "none" or { allow, loopback, addresses }' }).optional(),
      limits: limitsSchema.optional(),
    },
    { error: 'a role\'s sandbox is { env, egress, limits }: it narrows the run\'s sandbox and cannot turn it off (docs/security.md)' },
  )
  .transform((input): SandboxNarrowing => {
    const out: SandboxNarrowing = {};
    if (input.env) out.env = input.env;
    if (input.egress) out.egress = input.egress === 'none' ? NO_EGRESS : toEgressPolicy(input.egress);
    if (input.limits) out.limits = toLimits(input.limits);
    return out;
  });

/** The parsed section as a spec, without egress (a section of its own). */
export function toSandboxSpec(input: SandboxInput): SandboxSpec {
  if (input === 'none') return { mode: 'none' };
  const spec: SandboxSpec = {};
  if (input.mode) spec.mode = input.mode;
  if (input.env) spec.env = input.env;
  if (input.read) spec.read = input.read.map((p) => path.resolve(p));
  if (input.limits) spec.limits = toLimits(input.limits);
  return spec;
}

export function toLimits(l: z.infer<typeof limitsSchema>): Partial<ResourceLimits> {
  const out: Partial<ResourceLimits> = {};
  if (l.processes !== undefined) out.processes = l.processes;
  if (l.memory !== undefined) out.memoryBytes = l.memory;
  if (l.fileSize !== undefined) out.fileSizeBytes = l.fileSize;
  if (l.tmp !== undefined) out.tmpBytes = l.tmp;
  if (l.openFiles !== undefined) out.openFiles = l.openFiles;
  return out;
}
