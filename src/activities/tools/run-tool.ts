import { setTimeout as delay } from 'node:timers/promises';
import type { z } from 'zod';
import { durationMs } from '../../plan-format/duration';
import { isToolName, toolParams, type ToolName } from '../../plan-format/tools';
import { PROTECTED_PATHS, openBoundary } from '../confinement';
import { ErrorTypes, permanent } from '../../errors/application-failures';
import type { ToolContext } from './context';
import { editWorkspaceFile, readWorkspaceFile, writeWorkspaceFile } from './fs';
import { httpRequest } from './http';
import { inCodeThread } from './code/thread';
import { gitCommitTool, gitMergeTool, gitResetTool, gitStatusTool } from './git';
import { runShell } from './shell';

type Params<T extends ToolName> = z.infer<(typeof toolParams)[T]>;
type Handler<T extends ToolName> = (params: Params<T>, ctx: ToolContext) => Promise<unknown>;

const handlers: { [T in ToolName]: Handler<T> } = {
  shell: runShell,
  'fs.read': readWorkspaceFile,
  'fs.write': writeWorkspaceFile,
  'fs.edit': editWorkspaceFile,
  'http.request': httpRequest,
  sleep: async (params, ctx) => {
    await delay(durationMs(params.duration), undefined, { signal: ctx.signal });
    return { slept: params.duration };
  },
  'git.status': gitStatusTool,
  'git.commit': gitCommitTool,
  'git.merge': gitMergeTool,
  'git.reset': gitResetTool,
  // In a thread of their own: their TypeScript work would hold up the worker's main thread.
  'code.navigate_imports': inCodeThread('code.navigate_imports'),
  'code.find_implementations': inCodeThread('code.find_implementations'),
  'code.find_references': inCodeThread('code.find_references'),
  'code.trace_data_flow': inCodeThread('code.trace_data_flow'),
  'code.search': inCodeThread('code.search'),
};

/** Checks the resolved parameters against the tool's schema, then runs it inside the workspace. */
export async function runTool(tool: string, params: unknown, ctx: Omit<ToolContext, 'boundary'> & { workspace: string; worktree?: boolean }): Promise<unknown> {
  if (!isToolName(tool)) throw permanent(ErrorTypes.UnknownTool, `unknown tool "${tool}"`);
  const parsed = (toolParams[tool] as z.ZodType).safeParse(params);
  if (!parsed.success) {
    const reasons = parsed.error.issues.map((i) => `${i.path.join('.') || 'with'}: ${i.message}`).join('; ');
    throw permanent(ErrorTypes.BadToolInput, `bad parameters for ${tool}: ${reasons}`);
  }
  // Workers on other machines (containers) may not have the plan's workspace: said once, as WorkspaceMissing.
  // In a worktree, its `.git` (a file linking to the repository's metadata) is out of bounds too.
  const boundary = await openBoundary(ctx.workspace, { name: ctx.worktree ? 'worktree' : 'workspace', deny: PROTECTED_PATHS });
  const { stepId, attempt, call, signal, limits, sandbox, forModel } = ctx;
  return (handlers[tool] as Handler<ToolName>)(parsed.data as Params<ToolName>, { boundary, stepId, attempt, ...(call !== undefined && { call }), signal, limits, sandbox, ...(forModel && { forModel }) });
}
