import type { Boundary } from '../confinement';
import type { EgressLookup } from '../../egress';
import { NO_SECRETS, type WorkerSecrets } from '../../sandbox/environment';
import { DEFAULT_PROFILE, type SandboxProfile } from '../../sandbox/profile';

/** How much output a tool keeps before it cuts (and says so): more when big outputs leave history. */
export interface OutputLimits {
  /** Each of a shell command's stdout and stderr. */
  streamBytes: number;
  /** An http response body. */
  bodyBytes: number;
  /** A file `fs.read` returns; bigger ones are refused (TooLarge). */
  readBytes: number;
}

/** Outputs kept in history whole (runs from before the blob store): well under its 2 MB payloads. */
export const INLINE_OUTPUT_LIMITS: OutputLimits = { streamBytes: 256 * 1024, bodyBytes: 512 * 1024, readBytes: 1024 * 1024 };
/** Outputs whose big parts go to the blob store: bounded by the worker's memory, not by history. */
export const STORED_OUTPUT_LIMITS: OutputLimits = { streamBytes: 8 * 1024 * 1024, bodyBytes: 8 * 1024 * 1024, readBytes: 8 * 1024 * 1024 };

/** What every tool gets besides its parameters. */
export interface ToolContext {
  /** The plan's workspace: every path a tool takes stays inside it. */
  boundary: Boundary;
  limits: OutputLimits;
  stepId: string;
  attempt: number;
  /** Names this tool call, the same in each of its attempts (activity ids are): a retry finds what an earlier attempt did. */
  call?: string;
  signal: AbortSignal;
  /** An agent's call: the result is text for its model to read (a window of numbered lines, what changed). */
  forModel?: boolean;
  /** How the processes a tool starts are contained (people set it: plan, role, worker), and what they never get. */
  sandbox: ToolSandbox;
}

/** The worker's defaults with no secrets: for calling tools outside an activity (tests, benchmarks). */
export function defaultToolSandbox(): ToolSandbox {
  return { profile: DEFAULT_PROFILE, secrets: NO_SECRETS };
}

export interface ToolSandbox {
  profile: SandboxProfile;
  secrets: WorkerSecrets;
  log?: (line: string) => void;
  /** How egress resolves names, instead of the system's (tests). */
  lookup?: EgressLookup;
  /** Takes the worker's secrets out of a text: for what a tool cuts short itself (a secret cut in two would survive). */
  redact?: (text: string) => string;
}
