/**
 * Inside the sandbox the network is off but for its own loopback, and programs expect
 * `HTTP_PROXY=http://127.0.0.1:PORT`. The bridge is a tiny Node script run inside the sandbox:
 * it listens on 127.0.0.1:PORT and pipes every TCP connection to the egress proxy's unix
 * socket, bound into the sandbox. It decides nothing; the proxy does.
 *
 *   node -e "$BRIDGE_SCRIPT" <unixSocketPath> <port>     (port 0: pick a free one)
 *
 * Its first line on stdout is the port it listens on, written once it listens.
 */

export const BRIDGE_SCRIPT = String.raw`'use strict';
const net = require('net');
const socketPath = process.argv[1];
const port = Number(process.argv[2] || '0');
if (!socketPath || !Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write('usage: node -e "$BRIDGE_SCRIPT" <unixSocketPath> <port>\n');
  process.exit(2);
}
const server = net.createServer({ allowHalfOpen: true }, (client) => {
  const upstream = net.connect({ path: socketPath, allowHalfOpen: true });
  const drop = () => { client.destroy(); upstream.destroy(); };
  client.on('error', drop);
  upstream.on('error', drop);
  client.on('close', drop);
  upstream.on('close', drop);
  client.pipe(upstream);
  upstream.pipe(client);
});
server.on('error', (err) => {
  process.stderr.write('egress bridge: ' + err.message + '\n');
  process.exit(1);
});
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(server.address().port + '\n');
});
`;

/** The environment that sends a program's HTTP(S) traffic through the bridge on `port`. */
export function proxyEnv(port: number): Record<string, string> {
  const url = `http://127.0.0.1:${port}`;
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    ALL_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    all_proxy: url,
    // Empty, not unset: a NO_PROXY inherited from outside must not send anything around the proxy.
    NO_PROXY: '',
    no_proxy: '',
  };
}
