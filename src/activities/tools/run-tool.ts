import { stat } from 'node:fs/promises';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import type { z } from 'zod';
import { durationMs } from '../../spec/duration';
import { isToolName, toolParams, type ToolName } from '../../spec/tools';
import { ErrorTypes, permanent } from '../errors';
import type { ToolContext } from './context';
import { readWorkspaceFile, writeWorkspaceFile } from './fs';
import { httpRequest } from './http';
import { runShell } from './shell';

type Params<T extends ToolName> = z.infer<(typeof toolParams)[T]>;
type Handler<T extends ToolName> = (params: Params<T>, ctx: ToolContext) => Promise<unknown>;

const handlers: { [T in ToolName]: Handler<T> } = {
  shell: runShell,
  'fs.read': readWorkspaceFile,
  'fs.write': writeWorkspaceFile,
  'http.request': httpRequest,
  sleep: async (params, ctx) => {
    await delay(durationMs(params.duration), undefined, { signal: ctx.signal });
    return { slept: params.duration };
  },
};

/** Checks the resolved parameters against the tool's schema, then runs it. */
export async function runTool(tool: string, params: unknown, ctx: ToolContext): Promise<unknown> {
  if (!isToolName(tool)) throw permanent(ErrorTypes.UnknownTool, `unknown tool "${tool}"`);
  const parsed = (toolParams[tool] as z.ZodType).safeParse(params);
  if (!parsed.success) {
    const reasons = parsed.error.issues.map((i) => `${i.path.join('.') || 'with'}: ${i.message}`).join('; ');
    throw permanent(ErrorTypes.BadToolInput, `bad parameters for ${tool}: ${reasons}`);
  }
  await requireWorkspace(ctx.workspace);
  return (handlers[tool] as Handler<ToolName>)(parsed.data as Params<ToolName>, ctx);
}

/** Workers on other machines (containers) may not have the plan's workspace: say so once, not as a spawn error. */
async function requireWorkspace(workspace: string): Promise<void> {
  const info = await stat(workspace).catch(() => undefined);
  if (!info?.isDirectory()) {
    throw permanent(ErrorTypes.WorkspaceMissing, `workspace ${workspace} is not a directory on worker ${hostname()}`);
  }
}
