/**
 * How long a client waits for Temporal. A port that refuses the connection is known at once: the
 * client says so without waiting. A server that is there but answers slowly (a loaded machine, a
 * busy dev server, a cluster far away) gets more patience than the five seconds that runs on a
 * loaded 2-core machine did exceed.
 */
import net from 'node:net';

/** Waiting for the gRPC connection: more than the SDK's default 10 s. */
export const CONNECT_TIMEOUT_MS = 15_000;
/** The TCP handshake of the quick check; a check that gets no answer decides nothing. */
const PROBE_TIMEOUT_MS = 3_000;

/**
 * True when `address` (host:port) actively refuses connections: nothing listens there. Anything
 * else (it connects, a name that does not resolve here, no answer) is left to the gRPC connection,
 * and so is every address when a proxy variable routes gRPC elsewhere.
 */
export function refusesConnections(address: string, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  if (['grpc_proxy', 'https_proxy', 'http_proxy', 'GRPC_PROXY', 'HTTPS_PROXY', 'HTTP_PROXY'].some((name) => env[name])) return Promise.resolve(false);
  const colon = address.lastIndexOf(':');
  const host = address.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  const port = Number(address.slice(colon + 1));
  if (colon < 0 || !host || !Number.isInteger(port) || port <= 0 || port > 65535) return Promise.resolve(false);
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (refused: boolean) => {
      socket.destroy();
      resolve(refused);
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done(false));
    socket.once('connect', () => done(false));
    socket.once('error', (err: NodeJS.ErrnoException) => done(err.code === 'ECONNREFUSED'));
  });
}
