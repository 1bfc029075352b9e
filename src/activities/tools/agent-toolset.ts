/**
 * The built-in tools as an agent's model sees them: a name providers accept (`fs.read` becomes
 * `fs_read`), a description, and the JSON Schema of the parameters, from zod's own z.toJSONSchema.
 * Run as an activity when an agent starts, so the list sits in history and replays as it was.
 */
import { z } from 'zod';
import { ErrorTypes, permanent } from '../errors';
import { type ToolName, TOOL_NAMES, isToolName, toolParams } from '../../spec/tools';

export interface AgentTool {
  /** What the model calls it. */
  name: string;
  /** The cadre tool it runs. */
  tool: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

const DESCRIPTIONS: Record<ToolName, string> = {
  shell: 'Run a shell command (bash -c) in the workspace. Returns stdout, stderr and the exit code.',
  'fs.read': 'Read a text file of the workspace (path relative to it).',
  'fs.write': 'Write (or with append: true, append to) a file of the workspace.',
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

/** Providers take tool names of letters, digits, _ and -. */
export function modelToolName(tool: string): string {
  return tool.replace(/[^A-Za-z0-9_-]/g, '_');
}

export function agentToolset(tools: string[]): AgentTool[] {
  const unknown = tools.filter((tool) => !isToolName(tool));
  if (unknown.length > 0) throw permanent(ErrorTypes.UnknownTool, `no tool named ${unknown.join(', ')} (known tools: ${TOOL_NAMES.join(', ')})`);
  return [...new Set(tools)].map((tool) => ({
    name: modelToolName(tool),
    tool,
    description: DESCRIPTIONS[tool as ToolName],
    inputSchema: z.toJSONSchema(toolParams[tool as ToolName], { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>,
  }));
}
