/** What the egress tests share: a local HTTP server that records its requests, and a resolver from a table. */
import http from 'node:http';
import os from 'node:os';
import { defaultLookup, type EgressLookup } from '../../src/egress';

export interface TestServer {
  port: number;
  /** `METHOD /path` of every request received. */
  requests: string[];
  close(): Promise<void>;
}

export async function startServer(handler: http.RequestListener, host = '127.0.0.1'): Promise<TestServer> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen({ host, port: 0 }, resolve));
  return {
    port: (server.address() as { port: number }).port,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Known names from a table; this machine's own names from the real resolver (/etc/hosts, no network). */
export function tableLookup(table: Record<string, string[]>): EgressLookup {
  return async (name) => {
    if (table[name]) return table[name].map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    if (name === os.hostname() || name === 'localhost') return defaultLookup(name);
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: 'ENOTFOUND' });
  };
}
