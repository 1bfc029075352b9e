/**
 * The `tools` and `mcp` sections of cadre.config.yaml: TypeScript tool modules, and MCP servers
 * (stdio: a command; streamable HTTP: a URL). Paths are relative to the config file. Secrets stay
 * in the environment: headers name the variables that hold them.
 */
import path from 'node:path';
import { z } from 'zod';
import { ErrorTypes, permanent } from '../../../errors/application-failures';
import { egressSchema } from '../../../egress/policy';
import { limitsSchema } from '../../../sandbox/schema';

const envName = z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'must be the name of an environment variable');
export type McpServerSandbox = z.infer<typeof serverSandbox>;
const SERVER_NAME = /^[a-z0-9][a-z0-9_-]{0,31}$/;

/**
 * A stdio server runs in the sandbox like any tool process: its `cwd` read-only, nothing writable
 * but `write`, no network but `egress`, no environment variable of the worker's but `env` names.
 */
const serverSandbox = z.union([
  z.literal('none'),
  z.strictObject({
    write: z.array(z.string().min(1)).max(32).optional(),
    read: z.array(z.string().min(1)).max(32).optional(),
    env: z.array(envName).max(64).optional(),
    egress: egressSchema.optional(),
    /** The server's whole life under these (each the smaller of it and the worker's): its processes and memory as one cgroup. */
    limits: limitsSchema.optional(),
  }),
]);

const stdioServer = z.strictObject({
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  /** Extra environment for the server; values are literal (put secrets in the worker's own environment). */
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().optional(),
  sandbox: serverSandbox.optional(),
});

const httpServer = z.strictObject({
  url: z.url({ protocol: /^https?$/ }),
  /** Header name → environment variable holding its value (e.g. Authorization: MCP_TOKEN). */
  headersFromEnv: z.record(z.string(), envName).optional(),
});

const sectionsSchema = z.object({
  tools: z.strictObject({ modules: z.array(z.string().min(1)).default([]) }).optional(),
  mcp: z
    .strictObject({
      servers: z.record(z.string().regex(SERVER_NAME, 'server names are 1-32 lowercase letters, digits, _ or -'), z.union([stdioServer, httpServer])).default({}),
    })
    .optional(),
});

export type McpServerConfig = z.infer<typeof stdioServer> | z.infer<typeof httpServer>;

export interface CustomToolsConfig {
  /** Absolute paths of modules exporting `defineTool` tools. */
  modules: string[];
  mcpServers: Record<string, McpServerConfig>;
  /** Where relative paths (a server's cwd) start. */
  baseDir: string;
}

export const NO_CUSTOM_TOOLS: CustomToolsConfig = { modules: [], mcpServers: {}, baseDir: process.cwd() };

/** Reads the sections from a parsed config document; errors name the path (`mcp.servers.notes.url`). */
export function customToolsConfig(doc: unknown, source: string): CustomToolsConfig {
  const parsed = sectionsSchema.safeParse(doc ?? {});
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
    throw permanent(ErrorTypes.ModelConfigInvalid, `${source}: ${issues.join('; ')}`);
  }
  const baseDir = path.dirname(path.resolve(source));
  const servers = parsed.data.mcp?.servers ?? {};
  return {
    modules: (parsed.data.tools?.modules ?? []).map((m) => path.resolve(baseDir, m)),
    mcpServers: Object.fromEntries(Object.entries(servers).map(([name, s]) => [name, 'command' in s ? resolvePaths(s, baseDir) : s])),
    baseDir,
  };
}

/** A stdio server's paths (cwd, sandbox read and write) made absolute against the config file's folder; cwd defaults to it. */
function resolvePaths(server: z.infer<typeof stdioServer>, baseDir: string): z.infer<typeof stdioServer> {
  const at = (p: string) => path.resolve(baseDir, p);
  const box = server.sandbox;
  return {
    ...server,
    cwd: at(server.cwd ?? '.'),
    ...(box && box !== 'none' && { sandbox: { ...box, ...(box.write && { write: box.write.map(at) }), ...(box.read && { read: box.read.map(at) }) } }),
  };
}
