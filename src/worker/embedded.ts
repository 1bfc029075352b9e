/**
 * A Temporal server (existing or dev) with cadre's search attributes, plus a worker:
 * what `cadre dev`, `cadre demo` and the benchmark run.
 */
import { Connection } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { type DevServerOptions, type TemporalServer, resolveServer } from './dev-server';
import { ensureSearchAttributes } from './search-attributes';
import { createCadreWorker } from './worker';
import { hostName } from './host-name';

export interface Embedded {
  server: TemporalServer;
  worker: Worker;
  /** Resolves when the worker has stopped. */
  running: Promise<void>;
  /** Stops the worker (letting running tools finish), then the server if cadre started it. */
  stop(): Promise<void>;
}

export async function startEmbedded(options: DevServerOptions & { taskQueue?: string }): Promise<Embedded> {
  const log = options.log ?? (() => undefined);
  const server = await resolveServer(options);
  let connection: NativeConnection | undefined;
  try {
    await registerSearchAttributes(server, log);
    log('starting a worker...');
    const created = await createCadreWorker({ address: server.address, namespace: server.namespace, taskQueue: options.taskQueue, host: hostName() });
    log(`worker started (workflows: ${created.workflowCode})`);
    connection = created.connection;
    const worker = created.worker;
    const running = created.run();
    let stopping: Promise<void> | undefined;
    const stop = () =>
      (stopping ??= (async () => {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await running.catch(() => undefined);
        await created.connection.close();
        await server.stop();
      })());
    return { server, worker, running, stop };
  } catch (err) {
    await connection?.close();
    await server.stop();
    throw err;
  }
}

export async function registerSearchAttributes(server: TemporalServer, log: (line: string) => void): Promise<void> {
  const connection = await Connection.connect({ address: server.address });
  try {
    const report = await ensureSearchAttributes(connection, server.namespace);
    if (report.added.length > 0) log(`registered search attributes ${report.added.join(', ')} on namespace ${server.namespace}`);
  } finally {
    await connection.close();
  }
}
