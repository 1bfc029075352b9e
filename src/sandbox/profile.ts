/**
 * The sandbox profile: what a tool's processes may see and use. People set it (the plan, a role,
 * the worker's cadre.config.yaml); nothing a model sends reaches it. Plain data, so it travels in
 * workflow inputs and activity requests; a child run gets the same profile or a stricter one.
 */
import { type EgressPolicy, NO_EGRESS, narrowEgress } from '../egress/policy';

/** `none`: processes run as the worker's own, unconfined; only people can choose it, and the audit log records it. */
export type SandboxMode = 'bubblewrap' | 'none';

/** Per tool call: what one command and everything it starts may use. */
export interface ResourceLimits {
  /** Processes (and threads) at once. */
  processes: number;
  /** Address space of each process, and memory of the whole call where cgroups can be had. */
  memoryBytes: number;
  /** The largest file a process may write. */
  fileSizeBytes: number;
  /** The private /tmp and $HOME. */
  tmpBytes: number;
  openFiles: number;
}

export const DEFAULT_LIMITS: ResourceLimits = {
  processes: 512,
  memoryBytes: 4 * 1024 ** 3,
  fileSizeBytes: 1024 ** 3,
  tmpBytes: 512 * 1024 ** 2,
  openFiles: 1024,
};

export interface SandboxProfile {
  mode: SandboxMode;
  /** Worker environment variables passed to tools besides the base allow-list (never a secret). */
  env: string[];
  /** Paths tools may read besides the system directories (toolchains outside /usr, say). */
  read: string[];
  /** Hosts a tool may reach: through the sandbox's proxy for commands, directly for http.request. */
  egress: EgressPolicy;
  limits: ResourceLimits;
}

/** What a plan says of its tools' sandbox (compiled, absolute paths); absent fields take the worker's. */
export interface SandboxSpec {
  mode?: SandboxMode;
  env?: string[];
  read?: string[];
  egress?: EgressPolicy;
  limits?: Partial<ResourceLimits>;
  /** Narrowings applied after the plan's, in order: a role's (its agent and that agent's subtasks). */
  within?: SandboxNarrowing[];
}

/**
 * What a role says of its agents' sandbox. It can only take away: variables and hosts are kept
 * only where both sides name them, limits take the smaller. A role cannot say `none`.
 */
export interface SandboxNarrowing {
  /** Of the variables the plan and worker pass, the ones this role's tools keep. */
  env?: string[];
  egress?: EgressPolicy;
  limits?: Partial<ResourceLimits>;
}

export const DEFAULT_PROFILE: SandboxProfile = { mode: 'bubblewrap', env: [], read: [], egress: NO_EGRESS, limits: DEFAULT_LIMITS };

/**
 * The profile a call runs with: the worker's, with what the plan adds. Either side may say
 * `none` (people on both sides); names, paths and hosts add up, limits take the smaller.
 */
export function effectiveProfile(worker: SandboxProfile, plan: SandboxSpec | undefined): SandboxProfile {
  if (!plan) return worker;
  const merged: SandboxProfile = {
    mode: plan.mode === 'none' || worker.mode === 'none' ? 'none' : 'bubblewrap',
    env: union(worker.env, plan.env ?? []),
    read: union(worker.read, plan.read ?? []),
    egress: plan.egress ?? worker.egress,
    limits: smaller(worker.limits, plan.limits ?? {}),
  };
  return (plan.within ?? []).reduce(narrowProfile, merged);
}

/** A profile with a narrowing applied: never more open than it was. */
export function narrowProfile(profile: SandboxProfile, by: SandboxNarrowing): SandboxProfile {
  return {
    ...profile,
    ...(by.env && { env: profile.env.filter((name) => by.env?.includes(name)) }),
    ...(by.egress && { egress: narrowEgress(profile.egress, by.egress) }),
    ...(by.limits && { limits: smaller(profile.limits, by.limits) }),
  };
}

function union(a: string[], b: string[]): string[] {
  return [...new Set([...a, ...b])];
}

function smaller(base: ResourceLimits, other: Partial<ResourceLimits>): ResourceLimits {
  const out = { ...base };
  for (const key of Object.keys(base) as (keyof ResourceLimits)[]) {
    const value = other[key];
    if (value !== undefined) out[key] = Math.min(out[key], value);
  }
  return out;
}
