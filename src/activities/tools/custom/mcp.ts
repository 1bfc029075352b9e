/**
 * Connections to the MCP servers of cadre.config.yaml through the official SDK: one client per
 * server per worker, opened on first use and opened again after it fails (a server that died).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ErrorTypes, permanent, transient } from '../../../errors/application-failures';
import type { McpServerConfig } from './config';
import { realpathSync } from 'node:fs';
import { type EgressPolicy, egressFetch, toEgressPolicy } from '../../../egress';
import { type WorkerSecrets, toolEnvironment } from '../../../sandbox/environment';
import { SandboxUnavailable, prepareSandbox } from '../../../sandbox/executor';
import { closingInherited } from '../../../sandbox/spawn';
import { toLimits } from '../../../sandbox/schema';
import { type SandboxNarrowing, type SandboxProfile, effectiveProfile, narrowProfile } from '../../../sandbox/profile';
import { canonical } from '../../../protocol/canonical-json';

export interface McpToolInfo {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

export interface McpCallResult {
  isError: boolean;
  /** structuredContent when the tool gave one, else its text parts joined, else its content as it is. */
  value: unknown;
}

/** The worker's sandbox profile and secrets, read when a server first starts. */
export type Containment = () => { profile: SandboxProfile; secrets: WorkerSecrets };

export class McpServers {
  private readonly clients = new Map<string, Promise<Client>>();

  constructor(
    private readonly servers: Record<string, McpServerConfig>,
    private readonly containment: Containment,
  ) {}

  names(): string[] {
    return Object.keys(this.servers);
  }

  async listTools(server: string): Promise<McpToolInfo[]> {
    return this.withClient(server, [], async (client) => {
      const tools: McpToolInfo[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined);
        tools.push(...page.tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema as Record<string, unknown> })));
        cursor = page.nextCursor;
      } while (cursor);
      return tools;
    });
  }

  /** `within`: a role's narrowings of the server's sandbox; a narrowed server is an instance of its own. */
  async callTool(server: string, name: string, args: Record<string, unknown>, signal: AbortSignal, within: SandboxNarrowing[] = []): Promise<McpCallResult> {
    return this.withClient(server, within, async (client) => {
      const result = await client.callTool({ name, arguments: args }, undefined, { signal, timeout: 10 * 60 * 1000, resetTimeoutOnProgress: true });
      const content = (result.content ?? []) as { type: string; text?: string }[];
      const texts = content.filter((c) => c.type === 'text').map((c) => c.text ?? '');
      const value = result.structuredContent ?? (texts.length === content.length ? texts.join('\n') : content);
      return { isError: result.isError === true, value };
    });
  }

  async close(): Promise<void> {
    const clients = [...this.clients.values()];
    this.clients.clear();
    await Promise.allSettled(clients.map(async (c) => (await c).close()));
  }

  /** Runs `work` on the server's client; a failed connection or call drops the client so the next attempt reconnects. */
  private async withClient<T>(server: string, within: SandboxNarrowing[], work: (client: Client) => Promise<T>): Promise<T> {
    const config = this.servers[server];
    if (!config) throw permanent(ErrorTypes.UnknownTool, `no MCP server "${server}" in cadre.config.yaml (servers: ${this.names().join(', ') || 'none'})`);
    // An HTTP server is not the worker's to contain: one client whatever the role.
    const narrowed = 'command' in config ? within : [];
    const key = narrowed.length === 0 ? server : `${server} within ${canonical(narrowed)}`;
    let pending = this.clients.get(key);
    if (!pending) {
      pending = connect(server, config, this.containment, narrowed);
      this.clients.set(key, pending);
    }
    try {
      return await work(await pending);
    } catch (err) {
      // The server answered (unknown tool, bad arguments): the connection is fine and the same call would fail again.
      if (isProtocolError(err)) throw permanent('McpToolError', `MCP server "${server}": ${(err as Error).message.split('\n')[0]}`);
      this.clients.delete(key);
      void pending.then((c) => c.close()).catch(() => undefined);
      throw transient('McpServerUnavailable', `MCP server "${server}": ${(err as Error).message.split('\n')[0]}`);
    }
  }
}

/** The MCP SDK (about 300 modules, 0.14 s of a worker's start) loads when a server is first used. */
const mcpSdk = async () => {
  const [{ Client }, { StdioClientTransport }, { StreamableHTTPClientTransport }] = await Promise.all([
    import('@modelcontextprotocol/sdk/client/index.js'),
    import('@modelcontextprotocol/sdk/client/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
  ]);
  return { Client, StdioClientTransport, StreamableHTTPClientTransport };
};

async function connect(server: string, config: McpServerConfig, containment: Containment, within: SandboxNarrowing[]): Promise<Client> {
  const { Client, StdioClientTransport, StreamableHTTPClientTransport } = await mcpSdk();
  const client = new Client({ name: 'cadre', version: '0.1.0' });
  if (!('command' in config)) {
    // Its URL is the config's, written by people: that host and port are what the server may reach, and redirects are checked again.
    const fetch = egressFetch(serverEgress(new URL(config.url)));
    await client.connect(new StreamableHTTPClientTransport(new URL(config.url), { fetch, requestInit: { headers: headersFromEnv(server, config.headersFromEnv) } }));
    return client;
  }
  const { profile, secrets } = containment();
  const box = config.sandbox;
  const own =
    box === 'none'
      ? { mode: 'none' as const }
      : { env: box?.env ?? [], read: [...(box?.read ?? []), config.cwd ?? process.cwd()], ...(box?.egress && { egress: toEgressPolicy(box.egress) }), ...(box?.limits && { limits: toLimits(box.limits) }) };
  const serverProfile = within.reduce(narrowProfile, effectiveProfile(profile, own));
  const env = toolEnvironment({ profile: serverProfile, secrets, extra: config.env ?? {} });
  if (serverProfile.mode === 'none') {
    await client.connect(new StdioClientTransport({ command: config.command, args: config.args ?? [], env, ...(config.cwd && { cwd: config.cwd }), stderr: 'inherit' }));
    return client;
  }
  // The server's own cgroup, joined before it starts (its processes and memory capped as one), and
  // none of the worker's inherited descriptors: as a shell call has, for the server's whole life.
  const request = { argv: [config.command, ...(config.args ?? [])], cwd: config.cwd ?? process.cwd(), writable: existing(box === 'none' ? [] : (box?.write ?? [])), profile: serverProfile, env };
  const prepared = await prepareSandbox(request).catch((err: unknown) => {
    throw err instanceof SandboxUnavailable ? permanent(ErrorTypes.SandboxUnavailable, `MCP server "${server}": ${err.message}`) : err;
  });
  const { file, args } = closingInherited(prepared) ?? prepared;
  const transport = new StdioClientTransport({ command: file, args, env: prepared.env, stderr: 'inherit' });
  // The server's egress proxy and placeholders live as long as the server.
  const closed = transport.onclose;
  transport.onclose = () => {
    closed?.();
    void prepared.release();
  };
  try {
    await client.connect(transport);
  } catch (err) {
    await prepared.release();
    throw err;
  }
  return client;
}

/** An HTTP server's own host and port, and nothing else; loopback only when the URL names it. */
function serverEgress(url: URL): EgressPolicy {
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const local = host === 'localhost' || /^127\./.test(host) || host === '::1';
  return local ? { allow: [], loopback: [port], addresses: [] } : { allow: [host], loopback: [], addresses: [] };
}

/** Paths that exist, symlinks resolved: a server's `write` folders are made by people beforehand. */
function existing(paths: string[]): string[] {
  return paths.flatMap((p) => {
    try {
      return [realpathSync(p)];
    } catch {
      return [];
    }
  });
}

function headersFromEnv(server: string, names: Record<string, string> = {}): Record<string, string> {
  return Object.fromEntries(
    Object.entries(names).map(([header, variable]) => {
      const value = process.env[variable];
      if (!value) throw permanent(ErrorTypes.ModelConfigInvalid, `MCP server "${server}": header ${header} reads ${variable}, which is not set`);
      return [header, value];
    }),
  );
}

/** The MCP SDK's own codes for a lost connection and an unanswered request: the server, not the call, failed. */
const TRANSPORT_ERROR_CODES = new Set([-32000, -32001]);

/** An error the server answered with (bad arguments, unknown tool): the connection is fine. */
function isProtocolError(err: unknown): boolean {
  const code = typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'number' && !TRANSPORT_ERROR_CODES.has(code);
}
