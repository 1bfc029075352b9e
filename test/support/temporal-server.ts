/**
 * The real Temporal server (go.temporal.io/server, the version of docker-compose.yml's
 * temporalio/auto-setup image) on a PostgreSQL from ./postgres.ts, set up as auto-setup does it:
 * `temporal-sql-tool` creates the databases `temporal` and `temporal_visibility` and their schemas,
 * the server runs all four services (frontend, history, matching, worker) in one process with
 * deploy/dynamicconfig.yaml, and the `default` namespace is registered.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { status as grpcStatus } from '@grpc/grpc-js';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import YAML from 'yaml';
import { isPortFree } from '../../src/worker/ports';
import { cachedBinaryPath, findTemporalServer, TEMPORAL_SERVER_VERSION, type TemporalServerBinaries } from '../../src/worker/temporal-server';
import { ownedProcess } from './owned-process';
import type { Postgres } from './postgres';

const exec = promisify(execFile);
const REPO = path.join(__dirname, '..', '..');

export interface RealTemporalServer {
  /** The frontend's gRPC address, 127.0.0.1:<port>. */
  address: string;
  namespace: string;
  pid: number;
  binaries: TemporalServerBinaries;
  /** The server's log (JSON lines). */
  logFile: string;
  log(): string;
  /** SIGTERM (SIGKILL after 20 s), then deletes its directory. */
  stop(): Promise<void>;
  /** SIGKILL, then the server again on the same ports and database, once it serves the namespace. */
  restart(): Promise<void>;
}

export interface RealServerOptions {
  namespace?: string;
  /** Default: deploy/dynamicconfig.yaml, as docker-compose.yml mounts it. */
  dynamicConfigFile?: string;
  log?: (line: string) => void;
}

/** The server binaries, built with Go when missing; a clear error when they cannot be had. */
export async function requireTemporalServerBinaries(log: (line: string) => void = () => undefined): Promise<TemporalServerBinaries> {
  const binaries = await findTemporalServer({ log });
  if (!binaries) {
    throw new Error(
      `the real Temporal server ${TEMPORAL_SERVER_VERSION} (temporal-server and temporal-sql-tool) is needed: it is not in ` +
        `${path.dirname(cachedBinaryPath('temporal-server'))} and cannot be built there without Go. Install Go (then .ci/run, or ` +
        'this test, builds it from the Go module proxy) or set TEMPORAL_SERVER_PATH and TEMPORAL_SQL_TOOL_PATH.',
    );
  }
  return binaries;
}

/** `temporal-sql-tool` against `pg`: create-database, setup-schema -v 0.0, update-schema to the latest version. */
export async function setupTemporalSchemas(sqlTool: string, pg: Postgres): Promise<void> {
  const env = { ...process.env, SQL_PASSWORD: pg.password };
  const base = ['--plugin', 'postgres12', '--endpoint', pg.host, '--port', String(pg.port), '--user', pg.user];
  for (const [database, schema] of [['temporal', 'postgresql/v12/temporal'], ['temporal_visibility', 'postgresql/v12/visibility']]) {
    // The versioned schemas embedded in the tool are those of its server version (schema/ in go.temporal.io/server).
    for (const command of [['create-database'], ['setup-schema', '--version', '0.0'], ['update-schema', '--schema-name', schema]]) {
      try {
        await exec(sqlTool, [...base, '--database', database, ...command], { env });
      } catch (err) {
        const e = err as { stdout?: string; stderr?: string; message: string };
        throw new Error(`temporal-sql-tool ${command[0]} on ${database} failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`);
      }
    }
  }
}

/**
 * `count` distinct free ports below 32768: the PostgreSQL schema keeps the services' ports in a
 * SMALLINT (cluster_membership.rpc_port), so the OS's ephemeral ports (32768 and up) fail the
 * server's start with `value "45007" is out of range for type smallint`.
 */
async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) {
    const port = 10_000 + Math.floor(Math.random() * 22_000);
    if (!ports.has(port) && (await isPortFree(port))) ports.add(port);
  }
  return [...ports];
}

function serverConfig(pg: Postgres, ports: number[], dynamicConfigFile: string): unknown {
  const [frontend, frontendHttp, frontendMembership, history, historyMembership, matching, matchingMembership, worker, workerMembership] = ports;
  const datastore = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${pg.host}:${pg.port}`,
      connectProtocol: 'tcp',
      user: pg.user,
      password: pg.password,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const rpc = (grpcPort: number, membershipPort: number) => ({ grpcPort, membershipPort, bindOnIP: '127.0.0.1' });
  // docker/config_template.yaml of the server module, as auto-setup renders it with DB=postgres12.
  return {
    log: { stdout: true, level: 'warn' },
    persistence: {
      numHistoryShards: 4,
      defaultStore: 'default',
      visibilityStore: 'visibility',
      datastores: { default: datastore('temporal', 20), visibility: datastore('temporal_visibility', 10) },
    },
    global: { membership: { maxJoinDuration: '30s', broadcastAddress: '127.0.0.1' }, pprof: { port: 0 } },
    services: {
      frontend: { rpc: { ...rpc(frontend, frontendMembership), httpPort: frontendHttp } },
      history: { rpc: rpc(history, historyMembership) },
      matching: { rpc: rpc(matching, matchingMembership) },
      worker: { rpc: rpc(worker, workerMembership) },
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `127.0.0.1:${frontend}`, httpAddress: `127.0.0.1:${frontendHttp}` },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: dynamicConfigFile, pollInterval: '60s' },
  };
}

/** Polls `fn` until it resolves; rethrows its last error after `timeoutMs` or once `alive()` is false. */
async function retry<T>(what: string, fn: () => Promise<T>, timeoutMs: number, alive: () => boolean): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (!alive()) throw new Error(`${what}: the server exited (${(err as Error).message})`);
      if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000}s: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** Sets up the schemas on `pg`, starts the server, waits for its frontend and registers the namespace. */
export async function startTemporalServer(pg: Postgres, options: RealServerOptions = {}): Promise<RealTemporalServer> {
  const log = options.log ?? (() => undefined);
  const namespace = options.namespace ?? 'default';
  const binaries = await requireTemporalServerBinaries(log);
  await setupTemporalSchemas(binaries.sqlTool, pg);

  const root = mkdtempSync(path.join(os.tmpdir(), 'cadre-temporal-'));
  mkdirSync(path.join(root, 'config'));
  const ports = await freePorts(9);
  const config = serverConfig(pg, ports, options.dynamicConfigFile ?? path.join(REPO, 'deploy', 'dynamicconfig.yaml'));
  writeFileSync(path.join(root, 'config', 'cadre.yaml'), YAML.stringify(config));
  const logFile = path.join(root, 'temporal.log');
  const spawnServer = (): ChildProcess => {
    const out = openSync(logFile, 'a');
    const started = spawn(binaries.server, ['--root', root, '--config', 'config', '--env', 'cadre', '--allow-no-auth', 'start'], { cwd: root, stdio: ['ignore', out, out] });
    closeSync(out);
    return started;
  };
  const readLog = () => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  const address = `127.0.0.1:${ports[0]}`;
  let child = spawnServer();
  const alive = () => child.exitCode === null && child.signalCode === null;
  let stopChild = ownedProcess(child, root, 'SIGTERM', 20_000);
  const stop = () => stopChild();

  try {
    await untilServing(address, namespace, alive);
  } catch (err) {
    const tail = readLog().split('\n').slice(-30).join('\n');
    await stop();
    throw new Error(`${(err as Error).message}\nserver log (last lines):\n${tail}`);
  }
  log(`Temporal server ${TEMPORAL_SERVER_VERSION} on ${address} (PostgreSQL ${pg.host}:${pg.port}), namespace ${namespace}`);

  /** SIGKILLs the server and starts it again on the same ports, config and database (its folder stays). */
  const restart = async (): Promise<void> => {
    const exit = new Promise<void>((resolve) => (alive() ? child.once('exit', () => resolve()) : resolve()));
    child.kill('SIGKILL');
    await exit;
    // The killed process's ports may be held for a moment: a start that exits at once is tried again.
    const deadline = Date.now() + 20_000;
    for (;;) {
      child = spawnServer();
      stopChild = ownedProcess(child, root, 'SIGTERM', 20_000);
      try {
        await untilServing(address, namespace, alive);
        return;
      } catch (err) {
        if (alive() || Date.now() > deadline) throw new Error(`the restarted server: ${(err as Error).message}\nserver log (last lines):\n${readLog().split('\n').slice(-30).join('\n')}`);
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  };
  return { address, namespace, get pid() { return child.pid!; }, binaries, logFile, log: readLog, stop, restart };
}

/** Waits for the frontend, registers `namespace` (as auto-setup does) and waits until it is served. */
async function untilServing(address: string, namespace: string, alive: () => boolean): Promise<void> {
  const connection = await retry('the frontend answering', () => Connection.connect({ address, connectTimeout: 1000 }), 120_000, alive);
  try {
    await retry('the frontend answering', () => connection.workflowService.getSystemInfo({}), 120_000, alive);
    // What auto-setup does with DEFAULT_NAMESPACE and DEFAULT_NAMESPACE_RETENTION=168h.
    await retry(
      `registering namespace ${namespace}`,
      async () => {
        try {
          await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('168h') });
        } catch (err) {
          if ((err as { code?: number }).code !== grpcStatus.ALREADY_EXISTS) throw err;
        }
      },
      60_000,
      alive,
    );
    // docker-compose's health check: the frontend serves the namespace.
    await retry(`namespace ${namespace} served`, () => connection.operatorService.listSearchAttributes({ namespace }), 120_000, alive);
  } finally {
    await connection.close();
  }
}

/**
 * Waits until the frontend accepts workflows carrying these search attributes: a fresh server
 * caches the namespace's search attributes for up to a minute (docker-compose.yml says so). Starts
 * a probe workflow that no worker runs, with each attribute set, until it is accepted, then
 * terminates it. Returns the milliseconds it took.
 */
export async function waitForSearchAttributes(address: string, namespace: string, names: string[], timeoutMs = 180_000): Promise<number> {
  const started = Date.now();
  const connection = await Connection.connect({ address });
  const client = new Client({ connection, namespace });
  try {
    const handle = await retry(
      `search attributes ${names.join(', ')} usable`,
      () =>
        client.workflow.start('probe', {
          taskQueue: `probe-${process.pid}`,
          workflowId: `search-attribute-probe-${process.pid}-${Date.now()}`,
          searchAttributes: Object.fromEntries(names.map((name) => [name, ['probe']])),
        }),
      timeoutMs,
      () => true,
    );
    await handle.terminate('search attribute probe');
    return Date.now() - started;
  } finally {
    await connection.close();
  }
}
