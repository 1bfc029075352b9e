/**
 * The Temporal server cadre talks to: an existing one (TEMPORAL_ADDRESS), or a dev
 * server from the `temporal` CLI with its state in a file (so runs survive a
 * restart), cadre's search attributes registered and the Web UI on.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTES } from '../protocol/definitions';
import { freePort, isPortFree } from './ports';
import { findTemporalCli } from './temporal-cli';

export interface TemporalServer {
  address: string;
  namespace: string;
  /** Web UI base URL, when cadre started the server. */
  uiUrl?: string;
  /** True when cadre started this server (and `stop` ends it). */
  owned: boolean;
  /** The server's process, when cadre spawned the `temporal` CLI. */
  pid?: number;
  stop(): Promise<void>;
}

export interface DevServerOptions {
  /** Where the server keeps its SQLite file and log, e.g. `.cadre/`. */
  dataDir: string;
  /** gRPC port; a free one when missing or taken (unless `strictPorts`). */
  port?: number;
  uiPort?: number;
  /** Fail instead of picking other ports when the requested ones are taken. */
  strictPorts?: boolean;
  /** Keep state in memory only (tests). */
  ephemeral?: boolean;
  /** A codec server the Web UI decodes payloads with (`cadre codec-server`). */
  codecEndpoint?: string;
  /** Start the server again (same port, same database) when it dies, with backoff (`cadre dev`). */
  supervise?: boolean;
  /** Dynamic config values beside cadre's own (`history.maximumSignalsPerExecution: 1000`): a server with other limits. */
  dynamicConfig?: Record<string, string | number | boolean>;
  log?: (line: string) => void;
}

const READY_TIMEOUT_MS = 60_000;

/**
 * Server settings for speed on one machine. The dev server has one history shard, and by default
 * reads new tasks from it at most 20 times a second (`history.transferProcessorMaxPollRPS`): each
 * step of a chain needs two such reads, so every step took ~100 ms whatever the workflow. Raised,
 * with eager activity execution (a workflow task's worker takes the activities it schedules), a
 * step costs ~10-15 ms. docker-compose's server gets the same (deploy/dynamicconfig.yaml).
 */
export const TUNED_SERVER_ARGS = [
  '--dynamic-config-value', 'history.transferProcessorMaxPollRPS=1000',
  '--dynamic-config-value', 'system.enableActivityEagerExecution=true',
];

/**
 * For the file-backed `cadre dev`: SQLite's write-ahead log and `synchronous=normal` make each
 * commit a cheap append. A killed server loses nothing (the log survives the process); an OS crash
 * or power loss may lose the last moments of work, which a development server can afford.
 */
export const PERSISTENT_SQLITE_ARGS = ['--sqlite-pragma', 'journal_mode=wal', '--sqlite-pragma', 'synchronous=normal'];

function serverArgs(options: DevServerOptions): string[] {
  return [
    ...TUNED_SERVER_ARGS,
    ...Object.entries(options.dynamicConfig ?? {}).flatMap(([key, value]) => ['--dynamic-config-value', `${key}=${JSON.stringify(value)}`]),
    ...(options.codecEndpoint ? ['--ui-codec-endpoint', options.codecEndpoint] : []),
    ...(options.ephemeral ? [] : ['--db-filename', path.join(options.dataDir, 'temporal.db'), ...PERSISTENT_SQLITE_ARGS]),
  ];
}

export function externalServer(): TemporalServer | undefined {
  const address = process.env.TEMPORAL_ADDRESS;
  if (!address) return undefined;
  return { address, namespace: process.env.TEMPORAL_NAMESPACE || 'default', owned: false, stop: async () => undefined };
}

/** TEMPORAL_ADDRESS when set, else a dev server started here. */
export async function resolveServer(options: DevServerOptions): Promise<TemporalServer> {
  return externalServer() ?? startDevServer(options);
}

async function pickPort(wanted: number | undefined, strict: boolean | undefined, what: string): Promise<number> {
  if (wanted === undefined) return freePort();
  if (await isPortFree(wanted)) return wanted;
  if (strict) throw new Error(`${what} port ${wanted} is taken`);
  return freePort();
}

/**
 * Ports found free can be taken by another process before the server binds them (a test suite
 * starts many servers at once): the server then exits at start, and starts again on other ports.
 */
const START_ATTEMPTS = 3;

class PortTaken extends Error {}

export async function startDevServer(options: DevServerOptions): Promise<TemporalServer> {
  const log = options.log ?? (() => undefined);
  mkdirSync(options.dataDir, { recursive: true });
  const cli = await findTemporalCli({ log });
  for (let attempt = 1; ; attempt++) {
    const port = await pickPort(options.port, options.strictPorts, 'gRPC');
    const uiPort = await pickPort(options.uiPort, options.strictPorts, 'Web UI');
    if (!cli) return startWithSdkDownload(options, port, uiPort, log);
    try {
      return await startCli(cli, options, port, uiPort, log);
    } catch (err) {
      if (!(err instanceof PortTaken) || options.strictPorts || attempt === START_ATTEMPTS) throw err;
      log(`${err.message.split('\n')[0]}: a port was taken meanwhile, starting again on others`);
    }
  }
}

async function startCli(cli: string, options: DevServerOptions, port: number, uiPort: number, log: (line: string) => void): Promise<TemporalServer> {
  const logFile = path.join(options.dataDir, 'temporal.log');
  const args = [
    'server', 'start-dev',
    '--ip', '127.0.0.1',
    '--port', String(port),
    '--ui-port', String(uiPort),
    '--log-level', 'warn',
    ...SEARCH_ATTRIBUTES.flatMap((key) => ['--search-attribute', `${key.name}=Keyword`]),
    ...serverArgs(options),
  ];
  const launch = () => {
    const out = openSync(logFile, 'a');
    const child = spawn(cli, args, { stdio: ['ignore', out, out] });
    closeSync(out);
    return child;
  };
  const logFrom = existsSync(logFile) ? statSync(logFile).size : 0;
  const child = launch();
  const address = `127.0.0.1:${port}`;
  try {
    await waitUntilReady(address, child, logFile, logFrom);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const supervisor = options.supervise ? new Supervisor(child, launch, address, logFile, log) : undefined;
  return {
    address,
    namespace: 'default',
    uiUrl: `http://127.0.0.1:${uiPort}`,
    owned: true,
    pid: child.pid,
    stop: () => (supervisor ? supervisor.stop() : stopChild(child)),
  };
}

/** A server that stays up for this long has recovered: the next crash starts the backoff afresh. */
const HEALTHY_AFTER_MS = 60_000;
const MAX_RESTART_WAIT_MS = 30_000;

/**
 * Keeps a dev server up: when its process dies (killed, out of memory), says so and starts it
 * again on the same port and database, waiting 1 s, then 2, 4 ... up to 30 s between attempts
 * while it keeps failing. Workers and clients reconnect to the same address on their own.
 */
class Supervisor {
  private stopping = false;
  private failures = 0;
  private upSince = Date.now();

  constructor(
    private child: ChildProcess,
    private readonly launch: () => ChildProcess,
    private readonly address: string,
    private readonly logFile: string,
    private readonly log: (line: string) => void,
  ) {
    this.watch();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await stopChild(this.child);
  }

  private watch(): void {
    this.child.once('exit', (code, signal) => {
      if (!this.stopping) void this.restart(signal ?? `exit code ${code}`);
    });
  }

  private async restart(how: string): Promise<void> {
    if (Date.now() - this.upSince > HEALTHY_AFTER_MS) this.failures = 0;
    this.log(`the Temporal dev server stopped (${how}); workers and clients wait for it. Starting it again on ${this.address} with the same database...`);
    while (!this.stopping) {
      const wait = Math.min(MAX_RESTART_WAIT_MS, 1000 * 2 ** this.failures++);
      await delay(wait, undefined, { ref: false });
      if (this.stopping) return;
      this.child = this.launch();
      try {
        await waitUntilReady(this.address, this.child, this.logFile);
        this.upSince = Date.now();
        this.log(`the Temporal dev server is up again on ${this.address}`);
        this.watch();
        return;
      } catch (err) {
        this.child.kill('SIGKILL');
        this.log(`the Temporal dev server did not start again (${(err as Error).message.split('\n')[0]}); next try in ${Math.min(MAX_RESTART_WAIT_MS, 1000 * 2 ** this.failures) / 1000}s`);
      }
    }
  }
}

/** Waits for the server to answer; `logFrom`: where this start's lines begin in the log. */
async function waitUntilReady(address: string, child: ChildProcess, logFile: string, logFrom = 0): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  for (;;) {
    if (exited) {
      const said = tail(logFile, logFrom);
      throw new (said.includes('address already in use') ? PortTaken : Error)(`the Temporal dev server exited at start:\n${said}`);
    }
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await connection.close();
      }
    } catch {
      if (Date.now() > deadline) throw new Error(`the Temporal dev server did not start within 60s:\n${tail(logFile, logFrom)}`);
      await delay(250);
    }
  }
}

function tail(file: string, from = 0): string {
  try {
    return readFileSync(file).subarray(from).toString('utf8').trim().split('\n').slice(-10).join('\n');
  } catch {
    return '(no log)';
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timedOut = await Promise.race([exited.then(() => false), delay(10_000, true, { ref: false })]);
  if (timedOut) {
    child.kill('SIGKILL');
    await exited;
  }
}

/** Last resort on machines with internet: the SDK downloads and runs the same CLI. */
async function startWithSdkDownload(options: DevServerOptions, port: number, uiPort: number, log: (line: string) => void): Promise<TemporalServer> {
  log('no temporal CLI and no Go found: letting the Temporal SDK download the dev server');
  // A development dependency: installed in a clone of cadre, not with the package.
  const { TestWorkflowEnvironment } = await import('@temporalio/testing').catch((err: NodeJS.ErrnoException) => {
    if (err?.code !== 'MODULE_NOT_FOUND' && err?.code !== 'ERR_MODULE_NOT_FOUND') throw err;
    throw new Error(
      'no Temporal server: set TEMPORAL_ADDRESS to a server, put the temporal CLI on PATH (or TEMPORAL_CLI_PATH), install Go so cadre can build it, or `npm install @temporalio/testing` so the Temporal SDK can download it',
    );
  });
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      ip: '127.0.0.1',
      port,
      ui: true,
      uiPort,
      searchAttributes: SEARCH_ATTRIBUTES,
      extraArgs: serverArgs(options),
    },
  });
  return {
    address: `127.0.0.1:${port}`,
    namespace: env.namespace ?? 'default',
    uiUrl: `http://127.0.0.1:${uiPort}`,
    owned: true,
    stop: () => env.teardown(),
  };
}
