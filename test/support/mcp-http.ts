/** A stateless streamable-HTTP MCP server (the official SDK) in the test's process: a fresh server and transport per request. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface McpHttpServer {
  url: string;
  close(): Promise<void>;
}

/**
 * `tools` registers the server's tools; `before` sees each request first and may answer it itself
 * (returning true) or hold it (a promise).
 */
export async function startMcpHttpServer(tools: (mcp: McpServer) => void, before: (req: IncomingMessage, res: ServerResponse) => boolean | Promise<boolean> = () => false): Promise<McpHttpServer> {
  const http = createServer(async (req, res) => {
    if (await before(req, res)) return;
    const mcp = new McpServer({ name: 'test', version: '1.0.0' });
    tools(mcp);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void transport.close().then(() => mcp.close()));
    await mcp.connect(transport);
    await transport.handleRequest(req, res);
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`,
    close: async () => {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    },
  };
}
