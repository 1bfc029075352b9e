/**
 * Production connections: the CLI, the worker and CadreClient read Temporal's own environment
 * configuration (the `temporal` CLI's config file and profiles, TEMPORAL_* variables), with
 * --address/--namespace/--profile over it; a cluster behind mutual TLS is reached through it.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { CadreClient } from '../src/client/client';
import { resolveConnection, setConnectionFlags } from '../src/client/connection-config';
import { runCadre, startCadreWorker } from './support/cli';
import { tempWorkspace, uniqueId } from './support/harness';
import { makeCertificates, startTlsProxy } from './support/tls';

function configFile(toml: string): string {
  const file = path.join(mkdtempSync(path.join(os.tmpdir(), 'cadre-envconfig-')), 'temporal.toml');
  writeFileSync(file, toml);
  return file;
}

describe('where cadre connects', () => {
  const empty = tempWorkspace();
  const file = configFile(`
[profile.default]
address = "default.example:7233"
namespace = "team-a"

[profile.prod]
address = "prod.example:7233"
namespace = "prod"
api_key = "secret-key"

[profile.prod.grpc_meta]
x-tenant = "cadre"
`);
  afterEach(() => setConnectionFlags({}));

  test("the config file's default profile, then TEMPORAL_* over it, then the CLI's flags over both", () => {
    const env = { TEMPORAL_CONFIG_FILE: file };
    expect(resolveConnection({ projectDir: empty }, env)).toMatchObject({ address: 'default.example:7233', namespace: 'team-a', source: 'profile default' });
    expect(resolveConnection({ projectDir: empty }, { ...env, TEMPORAL_ADDRESS: 'env.example:7233' })).toMatchObject({ address: 'env.example:7233', namespace: 'team-a', source: 'TEMPORAL_ADDRESS' });
    setConnectionFlags({ address: 'flag.example:7233', namespace: 'flagged' });
    expect(resolveConnection({ projectDir: empty }, { ...env, TEMPORAL_ADDRESS: 'env.example:7233' })).toMatchObject({ address: 'flag.example:7233', namespace: 'flagged', source: '--address' });
  });

  test('a profile with an API key turns TLS on and sends the key and its gRPC metadata; --address keeps them, as in the temporal CLI', () => {
    const env = { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' };
    expect(resolveConnection({ projectDir: empty }, env)).toEqual({ address: 'prod.example:7233', namespace: 'prod', tls: true, apiKey: 'secret-key', metadata: { 'x-tenant': 'cadre' }, source: 'profile prod' });
    setConnectionFlags({ address: 'other.example:7233' });
    expect(resolveConnection({ projectDir: empty }, env)).toMatchObject({ address: 'other.example:7233', tls: true, apiKey: 'secret-key' });
  });

  test("an address given in code uses only the settings given with it; without any, cadre dev's server or localhost", () => {
    const env = { TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' };
    expect(resolveConnection({ address: 'mine:7233', projectDir: empty }, env)).toEqual({ address: 'mine:7233', namespace: 'default', source: 'the caller' });
    expect(resolveConnection({ projectDir: empty }, { HOME: empty, XDG_CONFIG_HOME: empty })).toEqual({ address: '127.0.0.1:7233', namespace: 'default', source: 'the default' });
  });

  test('an unknown profile or a broken config file is a clear error', () => {
    expect(() => resolveConnection({ profile: 'staging', projectDir: empty }, { TEMPORAL_CONFIG_FILE: file })).toThrow(`Temporal client configuration (${file}): Profile 'staging' not found in config data`);
    const broken = configFile('[profile.default]\naddres = "typo:7233"\n[profile');
    expect(() => resolveConnection({ projectDir: empty }, { TEMPORAL_CONFIG_FILE: broken })).toThrow(/^Temporal client configuration \(.*\): /);
  });
});

describe('a cluster behind mutual TLS', () => {
  test('the worker, the CLI and CadreClient reach it through a profile with certificates; without a client certificate nothing gets in', async () => {
    const dir = tempWorkspace();
    const certs = makeCertificates(dir);
    const proxy = await startTlsProxy(process.env.CADRE_TEST_ADDRESS as string, certs);
    const file = configFile(`
[profile.secure]
address = "${proxy.address}"
namespace = "${process.env.CADRE_TEST_NAMESPACE ?? 'default'}"

[profile.secure.tls]
server_ca_cert_path = "${certs.ca}"
client_cert_path = "${certs.clientCert}"
client_key_path = "${certs.clientKey}"

[profile.no-client-cert]
address = "${proxy.address}"

[profile.no-client-cert.tls]
server_ca_cert_path = "${certs.ca}"
`);
    const taskQueue = uniqueId('tls');
    const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_CONFIG_FILE: file, CADRE_TASK_QUEUE: taskQueue, CADRE_LOG_LEVEL: 'ERROR' };
    delete env.TEMPORAL_ADDRESS;
    writeFileSync(path.join(dir, 'plan.yaml'), 'name: over-tls\nsteps:\n  - { id: hello, tool: shell, with: { command: "echo secure" } }\noutput: "{{ steps.hello.output.stdout }}"\n');
    const worker = await startCadreWorker(['--profile', 'secure'], dir, env);
    try {
      expect(worker.stderr()).toContain(`worker on ${proxy.address}`);
      const id = uniqueId('over-tls');
      const run = await runCadre(['--profile', 'secure', 'run', 'plan.yaml', '--wait', '--id', id], dir, env);
      expect(run).toMatchObject({ code: 0, stdout: expect.stringMatching(/over-tls \(.*\): completed/) });

      process.env.TEMPORAL_CONFIG_FILE = file;
      const client = await CadreClient.connect({ profile: 'secure' });
      try {
        expect(client.server).toMatchObject({ address: proxy.address, source: 'profile secure' });
        const d = await client.diagnostics(id);
        expect(d).toMatchObject({ status: 'completed', output: 'secure\n' });
      } finally {
        await client.close();
        delete process.env.TEMPORAL_CONFIG_FILE;
      }
      expect(proxy.accepted).toBeGreaterThanOrEqual(3);

      const refusedBefore = proxy.refused;
      const denied = await runCadre(['--profile', 'no-client-cert', 'list'], dir, env);
      expect(denied).toMatchObject({ code: 1, stderr: expect.stringContaining(`cadre: cannot reach Temporal at ${proxy.address} (from profile no-client-cert;`) });
      expect(proxy.refused).toBeGreaterThan(refusedBefore);
    } finally {
      await worker.stop();
      await proxy.close();
    }
  });

  test("CadreClient over a Client of the caller's own: its connection stays open after close()", async () => {
    const connection = await Connection.connect({ address: process.env.CADRE_TEST_ADDRESS });
    try {
      const cadre = CadreClient.fromClient(new Client({ connection, namespace: process.env.CADRE_TEST_NAMESPACE ?? 'default' }));
      expect(cadre.server).toMatchObject({ address: process.env.CADRE_TEST_ADDRESS, namespace: process.env.CADRE_TEST_NAMESPACE ?? 'default' });
      expect(Array.isArray(await cadre.list({ limit: 1 }))).toBe(true);
      await cadre.close();
      await connection.workflowService.getSystemInfo({});
    } finally {
      await connection.close();
    }
  });
});
