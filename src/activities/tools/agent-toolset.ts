/**
 * The built-in tools as an agent's model sees them: a name providers accept (`fs.read` becomes
 * `fs_read`), a description, and the JSON Schema of the parameters, from zod's own z.toJSONSchema.
 * Run as an activity when an agent starts, so the list sits in history and replays as it was.
 */
import { z } from 'zod';
import { ErrorTypes, permanent } from '../../errors/application-failures';
import { type ToolName, TOOL_NAMES, isToolName, toolParams } from '../../plan-format/tools';
import { type CustomTools, isCustomTool, modelToolName, toolInputSchema } from './custom/registry';

export type { DescribedTool as AgentTool } from './custom/registry';
import type { DescribedTool as AgentTool } from './custom/registry';

const DESCRIPTIONS: Record<ToolName, string> = {
  shell: 'Run a shell command (bash -c) in the workspace. Returns stdout, stderr and the exit code.',
  'fs.read': 'Read a text file of the workspace (path relative to it): its lines, numbered, 100 at a time (from and to choose others).',
  'fs.write': 'Write a whole file of the workspace (with append: true, add to its end). Give the file\'s text without line numbers.',
  'fs.edit': 'Change part of a file: old_text, copied exactly from the file without line numbers and found there once, becomes new_text (all: true replaces every one).',
  'http.request': 'Make an HTTP request; returns status, headers and body.',
  sleep: 'Wait for a duration such as 5s.',
  'git.status': "The git status of the agent's worktree: branch and changed files.",
  'git.commit': "Commit the changes of the agent's worktree.",
  'git.merge': "Merge the worktree's branch into its base branch.",
  'git.reset': 'Discard every uncommitted change of the worktree.',
  'code.navigate_imports': 'Follow a symbol of a TypeScript file through its imports to where it is defined.',
  'code.find_implementations': 'Find the classes and objects that implement a TypeScript interface or type.',
  'code.find_references': 'Find every reference to a symbol of a TypeScript file.',
  'code.trace_data_flow': 'Trace where a value flows from and to through the TypeScript code.',
  'code.search': 'Search the workspace for literal text; returns files, lines and the matching text.',
};

/**
 * Parameters a model sees narrower or better explained than a plan's: a plan may write any JSON
 * value to a file, but a model that may writes objects where text was asked for (Qwen2.5-Coder
 * 1.5B did, under a grammar that let it). Each is a subset of the tool's own, which still checks the call.
 */
const FOR_MODELS: Partial<Record<ToolName, z.ZodType>> = {
  'fs.read': z.strictObject({
    path: z.string().min(1).describe('the file, relative to the workspace'),
    from: z.int().min(1).optional().describe('the first line to show (default 1)'),
    to: z.int().min(1).optional().describe('the last line to show (default from + 99)'),
  }),
  'fs.write': z.strictObject({
    path: z.string().min(1).describe('the file, relative to the workspace'),
    content: z.string().describe("the file's whole new text (with append: true, the text to add at its end)"),
    append: z.boolean().optional().describe('add content at the end instead of replacing the file'),
  }),
  'fs.edit': z.strictObject({
    path: z.string().min(1).describe('the file, relative to the workspace'),
    old_text: z.string().min(1).describe('the exact text to replace, copied from the file (without line numbers)'),
    new_text: z.string().describe('the text to put in its place'),
    all: z.boolean().optional().describe('replace every place old_text is found, not just one'),
  }),
};

/** The tools named, built-in or custom (`ts:`, `mcp:`), as the model will see them; names must come out unique. */
export async function agentToolset(tools: string[], custom: () => CustomTools): Promise<AgentTool[]> {
  const unknown = tools.filter((tool) => !isToolName(tool) && !isCustomTool(tool));
  if (unknown.length > 0) throw permanent(ErrorTypes.UnknownTool, `no tool named ${unknown.join(', ')} (known tools: ${TOOL_NAMES.join(', ')}, ts:<name>, mcp:<server>/<tool>)`);
  const described: AgentTool[] = [];
  for (const tool of new Set(tools)) {
    if (isCustomTool(tool)) described.push(...(await custom().describe(tool)));
    else described.push({ name: modelToolName(tool), tool, description: DESCRIPTIONS[tool as ToolName], inputSchema: toolInputSchema(FOR_MODELS[tool as ToolName] ?? toolParams[tool as ToolName]) });
  }
  const seen = new Map<string, string>();
  for (const t of described) {
    const other = seen.get(t.name);
    if (other !== undefined && other !== t.tool) throw permanent(ErrorTypes.UnknownTool, `${other} and ${t.tool} would both reach the model as "${t.name}": give one another name`);
    seen.set(t.name, t.tool);
  }
  return described.filter((t, i) => described.findIndex((d) => d.tool === t.tool) === i);
}
