/** A benchmark's Temporal: an ephemeral dev server with cadre's settings, one worker on the bundled workflows, a client. */
import path from 'node:path';
import { CadreClient } from '../src/client/client';
import { resolveServer } from '../src/worker/dev-server';
import { registerSearchAttributes } from '../src/worker/embedded';
import { type CadreWorkerOptions, createCadreWorker } from '../src/worker/worker';
import { benchWorkflowBundle } from './bench-bundle';

/** `activityDeps`: the worker's model settings, for a benchmark whose model is not scripted. */
export async function startBenchWorker(name: string, tmp: string, log: (line: string) => void, activityDeps?: CadreWorkerOptions['activityDeps']) {
  log('starting the Temporal server...');
  const server = await resolveServer({ dataDir: path.join(tmp, 'server'), ephemeral: true, log });
  try {
    await registerSearchAttributes(server, log);
    const workflowBundle = await benchWorkflowBundle(log);
    const taskQueue = `bench-${name}-${process.pid}`;
    const { worker, connection } = await createCadreWorker({ address: server.address, namespace: server.namespace, taskQueue, workflowBundle, auditDir: path.join(tmp, 'audit'), ...(activityDeps && { activityDeps }) });
    const client = await CadreClient.connect({ address: server.address, namespace: server.namespace });
    return { server, worker, client, taskQueue, connection };
  } catch (err) {
    await server.stop();
    throw err;
  }
}
