import type { Boundary } from '../confinement';

/** What every tool gets besides its parameters. */
export interface ToolContext {
  /** The plan's workspace: every path a tool takes stays inside it. */
  boundary: Boundary;
  stepId: string;
  attempt: number;
  signal: AbortSignal;
}
