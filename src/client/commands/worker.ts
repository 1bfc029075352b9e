/** `cadre worker` and `cadre setup`: a worker against any server, and the search attributes it needs. */
import type { Command } from 'commander';
import { CadreClient, CadreError, resolveConnection } from '../client';
import { connectionOptions } from '../connection-config';
import { taskQueue } from '../task-queue';
import { info, out, port, untilSignal, withClient } from './shared';

const RECONNECT_MS = 2000;

/** Workers may start before their server (containers, reboots): wait for it instead of exiting. */
async function connectWhenUp(): Promise<CadreClient> {
  let waiting = false;
  for (;;) {
    try {
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

export function registerWorkerCommands(program: Command): void {
  program
    .command('worker')
    .description('run a worker only, against TEMPORAL_ADDRESS (or the `cadre dev` server); scale out by starting more')
    .addHelpText('after', '\nExamples:\n  cadre worker\n  TEMPORAL_ADDRESS=temporal:7233 cadre worker --metrics-port 9464\n  cadre worker --profile prod')
    .option('--metrics-port <port>', 'serve Prometheus metrics at http://0.0.0.0:<port>/metrics (default: CADRE_METRICS_PORT; off)', port)
    .action(async (opts: { metricsPort?: number }) => {
      const metricsPort = opts.metricsPort ?? (process.env.CADRE_METRICS_PORT ? port(process.env.CADRE_METRICS_PORT) : undefined);
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
      statusLine(`worker on ${server.address}, namespace ${server.namespace}, task queue "${taskQueue()}"`, { address: server.address, namespace: server.namespace, taskQueue: taskQueue() });
      const { worker, connection, tracing, workflowCode } = await createCadreWorker({ ...connectionOptions(server), namespace: server.namespace });
      const running = worker.run();
      statusLine(`worker running (workflows: ${workflowCode}); Ctrl-C stops it after running tools finish`, { workflowCode, ...(metricsPort !== undefined && { metrics: `http://0.0.0.0:${metricsPort}/metrics` }) });
      await Promise.race([untilSignal(), running]);
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await tracing?.shutdown();
      await connection.close();
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
