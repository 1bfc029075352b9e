/** `cadre worker` and `cadre setup`: a worker against any server, and the search attributes it needs. */
import type { Command } from 'commander';
import type { CadreClient } from '../client';
import type { WorkerHost } from '../../activities';
import { CadreError, UsageError } from '../../errors/cadre-error';
import { connectionOptions, resolveConnection } from '../connection-config';
import { hostTaskQueue, taskQueue } from '../../protocol/task-queue';
import { hostLostAfterMs, hostName } from '../../worker/host-name';
import { type WorkerVersion, workerVersion } from '../../worker/deployment';
import { info, out, port, untilSignal, withClient, withRun } from './shared';

const RECONNECT_MS = 2000;

/** Workers may start before their server (containers, reboots): wait for it instead of exiting. */
async function connectWhenUp(): Promise<CadreClient> {
  let waiting = false;
  for (;;) {
    try {
      const { CadreClient } = await import('../client');
      const client = await CadreClient.connect();
      if (waiting) info(`reached Temporal at ${client.server.address}`);
      return client;
    } catch (err) {
      if (!(err instanceof CadreError)) throw err;
      if (!waiting) info(`${err.message}; trying again every ${RECONNECT_MS / 1000}s (Ctrl-C stops)`);
      waiting = true;
      await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
    }
  }
}

/** The worker's host name and version, checked before anything starts (with how long its runs wait before they call it lost). */
function hostNameOrUsage(): { host: string; version?: WorkerVersion } {
  try {
    hostLostAfterMs();
    const version = workerVersion();
    return { host: hostName(), ...(version && { version }) };
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

/**
 * What a worker does once it polls, on one client: says which build it is, making a deployment's
 * first build its current one (../../worker/deployment); and removes its host's clones that no run
 * needs (ended, or moved elsewhere while the host was away), saying what it kept.
 */
async function afterStart(host: WorkerHost | undefined, version: WorkerVersion | undefined, namespace: string): Promise<void> {
  const { statusLine } = await import('../../worker/logging');
  const client = await connectWhenUp();
  try {
    if (version) await announceVersion(client, version, namespace, statusLine);
    if (host) await pruneClones(client, host, statusLine);
  } catch (err) {
    statusLine(`warning: ${(err as Error).message}`);
  } finally {
    await client.close();
  }
}

type Say = (message: string, fields?: Record<string, unknown>) => void;

async function announceVersion(client: CadreClient, version: WorkerVersion, namespace: string, say: Say): Promise<void> {
  const { currentOrFirst } = await import('../../worker/deployment');
  const state = await currentOrFirst(client.connection, namespace, version);
  const name = `build ${version.buildId} of deployment ${version.deploymentName}`;
  const promote = `temporal worker deployment set-current-version --deployment-name ${version.deploymentName} --build-id ${version.buildId}`;
  const said = { current: `${name}: the current build`, 'made current': `${name}: made the current build (the deployment had none)`, 'not current': `${name}: not the current build; new runs go to the current one until \`${promote}\`` };
  say(state === undefined ? `warning: ${name}: the server did not say which build is current` : said[state], { deployment: version.deploymentName, buildId: version.buildId, ...(state && { state }) });
}

async function pruneClones(client: CadreClient, host: WorkerHost, say: Say): Promise<void> {
  const [{ pruneClones: prune }, { WorkflowNotFoundError }, { CadreHost }] = await Promise.all([import('../../activities/clone-prune'), import('@temporalio/client'), import('../../protocol/definitions')]);
  const report = await prune(host, async (run) => {
    try {
      const d = await client.client.workflow.getHandle(run).describe();
      const bound = d.typedSearchAttributes.get(CadreHost);
      return { open: d.status.name === 'RUNNING', ...(bound && { host: bound }) };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  });
  if (report.removed.length > 0) say(`removed ${report.removed.length} clone(s) of runs that ended or moved on: ${report.removed.join(', ')}`, { removed: report.removed });
  for (const kept of report.kept) if (!kept.why.endsWith('is open here')) say(`kept clone ${kept.path}: ${kept.why}`, { kept: kept.path, why: kept.why });
}

export function registerWorkerCommands(program: Command): void {
  program
    .command('worker')
    .description('run a worker only, against TEMPORAL_ADDRESS (or the `cadre dev` server); scale out by starting more')
    .addHelpText('after', '\nExamples:\n  cadre worker\n  TEMPORAL_ADDRESS=temporal:7233 cadre worker --metrics-port 9464\n  cadre worker --profile prod')
    .option('--metrics-port <port>', 'serve Prometheus metrics at http://0.0.0.0:<port>/metrics (default: CADRE_METRICS_PORT; off)', port)
    .action(async (opts: { metricsPort?: number }) => {
      const metricsPort = opts.metricsPort ?? (process.env.CADRE_METRICS_PORT ? port(process.env.CADRE_METRICS_PORT) : undefined);
      const { host, version } = hostNameOrUsage();
      const [{ installConciseLogging, statusLine }, { SetupPermissionError, ensureSearchAttributes }, { createCadreWorker }, { workerSandboxWarning }] = await Promise.all([
        import('../../worker/logging'),
        import('../../worker/search-attributes'),
        import('../../worker/worker'),
        import('../../activities/sandbox-settings'),
      ]);
      installConciseLogging('WARN', metricsPort === undefined ? {} : { metricsAddress: `0.0.0.0:${metricsPort}` });
      const server = resolveConnection();
      const client = await connectWhenUp();
      try {
        const report = await ensureSearchAttributes(client.connection, server.namespace);
        if (report.added.length > 0) statusLine(`registered search attributes ${report.added.join(', ')}`);
      } catch (err) {
        if (!(err instanceof SetupPermissionError)) throw err;
        statusLine(`warning: ${err.message}`);
      } finally {
        await client.close();
      }
      const sandboxWarning = workerSandboxWarning();
      if (sandboxWarning) statusLine(`warning: ${sandboxWarning}`);
      statusLine(`worker on ${server.address}, namespace ${server.namespace}, task queue "${taskQueue()}", host ${host} (its own queue "${hostTaskQueue(host)}")`, {
        address: server.address,
        namespace: server.namespace,
        taskQueue: taskQueue(),
        host,
        hostTaskQueue: hostTaskQueue(host),
      });
      const created = await createCadreWorker({ ...connectionOptions(server), namespace: server.namespace, host, ...(version && { version }) });
      const { worker, run, connection, tracing, workflowCode } = created;
      const running = run();
      void afterStart(created.host, version, server.namespace);
      statusLine(`worker running (workflows: ${workflowCode}); Ctrl-C stops it after running tools finish`, { workflowCode, ...(metricsPort !== undefined && { metrics: `http://0.0.0.0:${metricsPort}/metrics` }) });
      await Promise.race([untilSignal(), running]);
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await tracing?.shutdown();
      await connection.close();
    });

  program
    .command('workers')
    .description("the fleet's hosts: each one's own task queue, its worker processes, its last poll, up or lost")
    .addHelpText('after', '\nExamples:\n  cadre workers\n  cadre workers --json | jq -r \'.[] | select(.state == "lost") | .host\'')
    .option('--task-queue <queue>', 'the shared task queue', taskQueue())
    .option('--json', 'print JSON')
    .action(async (opts: { taskQueue: string; json?: boolean }) => {
      const { listHosts } = await import('../hosts');
      await withClient(async (client) => {
        const hosts = await listHosts(client.client, opts.taskQueue);
        if (opts.json) return out(JSON.stringify(hosts, null, 2));
        if (hosts.length === 0) return out(`no worker polls task queue "${opts.taskQueue}": start \`cadre worker\` (CADRE_HOST names its host)`);
        const rows = hosts.map((h) => [h.host, h.state, h.state === 'shared-only' ? '-' : h.taskQueue, String(h.pollers.shared), String(h.pollers.own), String(h.runs ?? '-'), h.lastPollAt ?? '-']);
        const table = [['HOST', 'STATE', 'OWN QUEUE', 'PROCESSES', 'OWN POLLERS', 'RUNS', 'LAST POLL OF OWN QUEUE'], ...rows];
        const widths = table[0].map((_, i) => Math.max(...table.map((row) => row[i].length)) + 2);
        for (const row of table) out(row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]))).join(''));
      });
    });

  program
    .command('move <id>')
    .description('give up on the host a run waits for: its workspace activities go to another host that holds the workspace')
    .addHelpText('after', '\nExamples:\n  cadre move plan-triage-1a2b3c --to build-2')
    .requiredOption('--to <host>', 'the host to move to (`cadre workers` lists them)')
    .option('--json', 'print {workflowId, from, to, agents, chunks} as JSON')
    .action(async (id: string, opts: { to: string; json?: boolean }) => {
      await withRun(id, async (client) => {
        const moved = await client.moveHost(id, opts.to);
        out(opts.json ? JSON.stringify({ workflowId: id, ...moved }) : `moved ${id} from host ${moved.from} to host ${moved.to}${toldOfMove(moved)}`);
      });
    });

  program
    .command('setup')
    .description("register cadre's search attributes on the namespace (needs operator rights)")
    .addHelpText('after', '\nExamples:\n  cadre setup\n  cadre --profile prod setup')
    .action(async () => {
      const { ensureSearchAttributes } = await import('../../worker/search-attributes');
      await withClient(async (client) => {
        const report = await ensureSearchAttributes(client.connection, client.server.namespace);
        if (report.added.length > 0) out(`registered: ${report.added.join(', ')}`);
        if (report.present.length > 0) out(`already present: ${report.present.join(', ')}`);
      });
    });
}

/** ` (and its 1 running agent and 2 forEach chunks)`: the run's children that were told of a move. */
function toldOfMove({ agents, chunks }: { agents: number; chunks: number }): string {
  const parts = [...(agents > 0 ? [`${agents} running agent${agents === 1 ? '' : 's'}`] : []), ...(chunks > 0 ? [`${chunks} forEach chunk${chunks === 1 ? '' : 's'}`] : [])];
  return parts.length === 0 ? '' : ` (and its ${parts.join(' and ')})`;
}
