import net from 'node:net';
import { refusesConnections } from '../../src/client/reach';

test('a port nothing listens on refuses at once; a listening one, and any behind a proxy variable, go on to gRPC', async () => {
  const server = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  try {
    expect(await refusesConnections(`127.0.0.1:${port}`, {})).toBe(false);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  expect(await refusesConnections(`127.0.0.1:${port}`, {})).toBe(true);
  expect(await refusesConnections(`127.0.0.1:${port}`, { HTTPS_PROXY: 'http://proxy:3128' })).toBe(false);
  expect(await refusesConnections('not an address', {})).toBe(false);
});
