/**
 * `defineTool`: a TypeScript tool an agent can call. Its zod parameters are sent to the model as
 * JSON Schema (z.toJSONSchema) and checked before the handler runs. List the module that exports
 * it under `tools.modules` in cadre.config.yaml, and name it `ts:<name>` in an agent's tools.
 */
import type { z } from 'zod';

export interface ToolRunContext {
  /** The step's workspace (or worktree). Paths a tool takes are its own to keep inside it. */
  workspace: string;
  stepId: string;
  attempt: number;
  /** Aborted when the run or the step is cancelled, or the activity times out. */
  signal: AbortSignal;
}

export interface CadreTool<P extends z.ZodObject = z.ZodObject> {
  readonly kind: 'cadre-tool';
  name: string;
  description: string;
  parameters: P;
  handler: (params: z.infer<P>, ctx: ToolRunContext) => unknown;
}

export const TOOL_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

export function defineTool<P extends z.ZodObject>(tool: Omit<CadreTool<P>, 'kind'>): CadreTool<P> {
  if (!TOOL_NAME.test(tool.name)) throw new Error(`tool name "${tool.name}" must be a letter then up to 63 letters, digits, _ or -`);
  return { kind: 'cadre-tool', ...tool };
}

export function isCadreTool(value: unknown): value is CadreTool {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'cadre-tool';
}
