/** What every tool gets besides its parameters. */
export interface ToolContext {
  workspace: string;
  stepId: string;
  attempt: number;
  signal: AbortSignal;
}
