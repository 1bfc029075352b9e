/** A benchmark's Temporal: an ephemeral dev server with cadre's settings, one worker on the bundled workflows, a client. */
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { CadreClient } from '../src/client/client';
import { resolveServer } from '../src/worker/dev-server';
import { registerSearchAttributes } from '../src/worker/embedded';
import { type CadreWorkerOptions, createCadreWorker } from '../src/worker/worker';

/** `activityDeps`: the worker's model settings, for a benchmark whose model is not scripted. */
export async function startBenchWorker(name: string, tmp: string, log: (line: string) => void, activityDeps?: CadreWorkerOptions['activityDeps']) {
  log('starting the Temporal server...');
  const server = await resolveServer({ dataDir: path.join(tmp, 'server'), ephemeral: true, log });
  try {
    await registerSearchAttributes(server, log);
    log('bundling workflows...');
    const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('./workflows'), logger: { trace() {}, debug() {}, info() {}, warn: log, error: log, log() {} } });
    const taskQueue = `bench-${name}-${process.pid}`;
    const { worker, connection } = await createCadreWorker({ address: server.address, namespace: server.namespace, taskQueue, workflowBundle: { code }, auditDir: path.join(tmp, 'audit'), ...(activityDeps && { activityDeps }) });
    const client = await CadreClient.connect({ address: server.address, namespace: server.namespace });
    return { server, worker, client, taskQueue, connection };
  } catch (err) {
    await server.stop();
    throw err;
  }
}
