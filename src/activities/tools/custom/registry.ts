/**
 * The tools beyond the built-in ones: TypeScript tools (`ts:<name>`, from `tools.modules`) and MCP
 * servers' tools (`mcp:<server>/<tool>`, or `mcp:<server>/*` for all of them). One per worker,
 * loaded on first use.
 */
import { z } from 'zod';
import type { CadreTool, ToolRunContext } from '../../../tools/define';
import type { SandboxNarrowing } from '../../../sandbox/profile';
import { ErrorTypes, permanent } from '../../../errors/application-failures';
import type { CustomToolsConfig } from './config';
import { type Containment, McpServers } from './mcp';
import { loadToolModules } from './modules';

export interface DescribedTool {
  /** The name the model calls (providers take letters, digits, _ and -). */
  name: string;
  /** The name cadre runs it by. */
  tool: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

const TS_PREFIX = 'ts:';
const MCP_PREFIX = 'mcp:';

export function isCustomTool(tool: string): boolean {
  return tool.startsWith(TS_PREFIX) || tool.startsWith(MCP_PREFIX);
}

export class CustomTools {
  private modules?: Promise<Map<string, CadreTool>>;
  private readonly mcp: McpServers;

  constructor(
    private readonly config: CustomToolsConfig,
    containment: Containment,
  ) {
    this.mcp = new McpServers(config.mcpServers, containment);
  }

  async describe(tool: string): Promise<DescribedTool[]> {
    if (tool.startsWith(TS_PREFIX)) {
      const found = await this.typescriptTool(tool);
      return [{ name: modelToolName(found.name), tool, description: found.description, inputSchema: toolInputSchema(found.parameters) }];
    }
    const { server, name } = mcpName(tool);
    const listed = await this.mcp.listTools(server);
    const chosen = name === '*' ? listed : listed.filter((t) => t.name === name);
    if (chosen.length === 0) {
      throw permanent(ErrorTypes.UnknownTool, `MCP server "${server}" has no tool "${name}" (it has: ${listed.map((t) => t.name).join(', ') || 'none'})`);
    }
    return chosen.map((t) => ({ name: modelToolName(`${server}__${t.name}`), tool: `${MCP_PREFIX}${server}/${t.name}`, description: t.description ?? '', inputSchema: t.inputSchema }));
  }

  /** `within`: the calling agent's role narrowings, which an MCP stdio server is started under (one server per narrowing). */
  async call(tool: string, args: unknown, ctx: ToolRunContext, within?: SandboxNarrowing[]): Promise<unknown> {
    if (tool.startsWith(TS_PREFIX)) {
      const found = await this.typescriptTool(tool);
      const parsed = found.parameters.safeParse(args);
      if (!parsed.success) {
        throw permanent(ErrorTypes.BadToolInput, `bad parameters for ${tool}: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'with'}: ${i.message}`).join('; ')}`);
      }
      return found.handler(parsed.data, ctx);
    }
    const { server, name } = mcpName(tool);
    if (typeof args !== 'object' || args === null || Array.isArray(args)) throw permanent(ErrorTypes.BadToolInput, `${tool} takes a JSON object of arguments`);
    const result = await this.mcp.callTool(server, name, args as Record<string, unknown>, ctx.signal, within);
    if (result.isError) throw permanent('McpToolError', `${tool}: ${typeof result.value === 'string' ? result.value : JSON.stringify(result.value)}`);
    return result.value;
  }

  close(): Promise<void> {
    return this.mcp.close();
  }

  private async typescriptTool(tool: string): Promise<CadreTool> {
    this.modules ??= loadToolModules(this.config.modules);
    const modules = await this.modules.catch((err: unknown) => {
      this.modules = undefined; // a module fixed on disk is read again by the next attempt
      throw err;
    });
    const found = modules.get(tool.slice(TS_PREFIX.length));
    if (!found) throw permanent(ErrorTypes.UnknownTool, `no TypeScript tool "${tool.slice(TS_PREFIX.length)}" in tools.modules (known: ${[...modules.keys()].join(', ') || 'none'})`);
    return found;
  }
}

function mcpName(tool: string): { server: string; name: string } {
  const rest = tool.slice(MCP_PREFIX.length);
  const slash = rest.indexOf('/');
  if (slash <= 0 || slash === rest.length - 1) throw permanent(ErrorTypes.UnknownTool, `"${tool}" is not mcp:<server>/<tool>`);
  return { server: rest.slice(0, slash), name: rest.slice(slash + 1) };
}

/** The JSON Schema a model is sent for a tool's zod parameters: what callers may send (zod's own z.toJSONSchema). */
export function toolInputSchema(parameters: z.ZodType): Record<string, unknown> {
  return z.toJSONSchema(parameters, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
}

/** A tool's name as providers take it: 1-64 letters, digits, _ and - (`fs.read` becomes `fs_read`). */
export function modelToolName(name: string): string {
  return name.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 64);
}
