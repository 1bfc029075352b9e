/**
 * TLS for tests: certificates made with openssl (a CA, a server certificate for localhost and
 * 127.0.0.1, a client certificate), and a TLS-terminating proxy in front of the plaintext dev
 * server, as a load balancer or ingress fronts a production cluster. `temporal server start-dev`
 * has no TLS flags of its own.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';

export interface Certificates {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

export function makeCertificates(dir: string): Certificates {
  const file = (name: string) => path.join(dir, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '2', '-subj', '/CN=cadre test CA', '-keyout', 'ca.key', '-out', 'ca.pem');
  const sign = (name: string, subject: string, ext: string) => {
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-subj', subject, '-keyout', `${name}.key`, '-out', `${name}.csr`);
    writeFileSync(file(`${name}.ext`), ext);
    openssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', `${name}.ext`, '-out', `${name}.pem`);
  };
  sign('server', '/CN=localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  sign('client', '/CN=cadre test client', 'extendedKeyUsage=clientAuth\n');
  return { ca: file('ca.pem'), serverCert: file('server.pem'), serverKey: file('server.key'), clientCert: file('client.pem'), clientKey: file('client.key') };
}

export interface TlsProxy {
  address: string;
  /** TLS sessions that completed the handshake (with a trusted client certificate). */
  readonly accepted: number;
  /** Handshakes refused (no client certificate, an untrusted one, not TLS at all). */
  readonly refused: number;
  close(): Promise<void>;
}

/** Terminates mutual TLS (HTTP/2 by ALPN, as gRPC needs) and forwards the bytes to `target`. */
export async function startTlsProxy(target: string, certs: Certificates): Promise<TlsProxy> {
  const [host, port] = [target.slice(0, target.lastIndexOf(':')), Number(target.slice(target.lastIndexOf(':') + 1))];
  const sockets = new Set<net.Socket>();
  const counts = { accepted: 0, refused: 0 };
  const server = tls.createServer(
    {
      cert: readFileSync(certs.serverCert),
      key: readFileSync(certs.serverKey),
      ca: readFileSync(certs.ca),
      requestCert: true,
      rejectUnauthorized: true,
      ALPNProtocols: ['h2'],
    },
    (client) => {
      counts.accepted++;
      const upstream = net.connect(port, host);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    },
  );
  server.on('tlsClientError', () => counts.refused++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port: listening } = server.address() as net.AddressInfo;
  return {
    address: `127.0.0.1:${listening}`,
    get accepted() {
      return counts.accepted;
    },
    get refused() {
      return counts.refused;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
