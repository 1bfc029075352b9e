/**
 * An MCP stdio server that runs what it is asked (test/fixtures/tools/exec-mcp-server.ts), attacked
 * through its tool with the shell cases of other categories: the server is contained as a shell
 * call is (its sandbox, and limits as one cgroup for its whole life), so each must be contained
 * the same way, checked by the same host-side checks.
 */
import path from 'node:path';
import type { Case } from '../cases';
import { TSX } from '../../support/tsx';

/** The red team's servers: one contained with these limits, and one with `sandbox: none` (the positive control). */
export function redTeamMcpServers(limits: { processes: number; memory: number }) {
  const repo = path.resolve(__dirname, '..', '..', '..');
  const exec = { command: process.execPath, args: ['--import', TSX, path.join(repo, 'test', 'fixtures', 'tools', 'exec-mcp-server.ts')] };
  return {
    modules: [],
    mcpServers: { rtbox: { ...exec, sandbox: { read: [repo], limits } }, rtloose: { ...exec, sandbox: 'none' as const } },
    baseDir: repo,
  };
}

/** Shell cases sent through a server's `run` tool instead of `shell`. */
export function throughMcp(cases: Case[], server: 'rtbox' | 'rtloose'): Case[] {
  return cases.map((c) => {
    const args = c.call.args as { command: string };
    return { ...c, id: `mcp-${c.id}`, category: 'mcp', title: `through an MCP server: ${c.title}`, call: { name: `${server}__run`, args: { command: args.command } } };
  });
}
