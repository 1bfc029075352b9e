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

/** A name, or `<agent>.<method>` for an agent's method. */
export const TOOL_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}(\.[A-Za-z][A-Za-z0-9_-]{0,63})?$/;

export function defineTool<P extends z.ZodObject>(tool: Omit<CadreTool<P>, 'kind'>): CadreTool<P> {
  if (!TOOL_NAME.test(tool.name)) throw new Error(`tool name "${tool.name}" must be a letter then up to 63 letters, digits, _ or -`);
  return { kind: 'cadre-tool', ...tool };
}

export function isCadreTool(value: unknown): value is CadreTool {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'cadre-tool';
}

export interface AgentMethod<P extends z.ZodObject = z.ZodObject> {
  description: string;
  parameters: P;
  handler: (params: z.infer<P>, ctx: ToolRunContext) => unknown;
}

/**
 * A typed agent: an object whose methods are tools (`ts:<agent>.<method>`), for plan steps and for
 * other agents. Export the result from a module in `tools.modules`.
 */
export function defineAgent<M extends Record<string, z.ZodObject>>(agent: { name: string; description: string; methods: { [K in keyof M]: AgentMethod<M[K]> } }): CadreTool[] {
  return Object.entries(agent.methods as Record<string, AgentMethod>).map(([method, m]) =>
    defineTool({ name: `${agent.name}.${method}`, description: `${agent.description}: ${m.description}`, parameters: m.parameters, handler: m.handler }),
  );
}
