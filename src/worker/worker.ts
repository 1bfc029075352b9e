/**
 * Builds a cadre worker: the plan workflows plus every activity on the shared task queue, and, for
 * a worker with a host, every activity again on the queue only that host polls (hostTaskQueue).
 */
import { NativeConnection, type NativeConnectionOptions, Worker, type WorkerOptions } from '@temporalio/worker';
import { type ActivityDeps, type WorkerHost, createActivities } from '../activities';
import { auditSinks } from './audit-log';
import { cadreDataConverter } from '../codec/data-converter';
import { type Tracing, tracingFromEnv } from './tracing';
import { prebuiltBundle } from './prebuilt-bundle';

import { hostTaskQueue, taskQueue } from '../protocol/task-queue';
import { type WorkerVersion, deploymentOptions } from './deployment';

export { DEFAULT_TASK_QUEUE, hostTaskQueue, taskQueue } from '../protocol/task-queue';
export { hostName } from './host-name';
import { hostLostAfterMs } from './host-name';

export interface CadreWorkerOptions {
  address: string;
  namespace: string;
  /** TLS, API key and gRPC metadata for a production cluster (from Temporal's config file and variables). */
  tls?: NativeConnectionOptions['tls'];
  apiKey?: string;
  metadata?: Record<string, string>;
  taskQueue?: string;
  /**
   * This machine's name among cadre's hosts (`cadre worker`: CADRE_HOST, else the machine's name):
   * the worker also polls the host's own queue, and says so in its identity. Unset (tests, benchmarks):
   * the shared queue only.
   */
  host?: string;
  /** A version of a Worker Deployment (CADRE_BUILD_ID, ./deployment): the server sends it only the runs its build can replay. */
  version?: WorkerVersion;
  /** A bundle built once with `bundleWorkflowCode` (tests); otherwise a prebuilt one (./prebuilt-bundle), else the worker bundles at start. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Activity dependencies besides the blob store (model settings in tests). */
  activityDeps?: ActivityDeps;
  /** Where audit logs go; default CADRE_AUDIT_DIR or ~/.cadre/audit. */
  auditDir?: string;
  /** Extra worker options (tests and benchmarks). */
  overrides?: Partial<WorkerOptions>;
}

export interface CadreWorker {
  /** The shared queue's worker: workflows and activities. */
  worker: Worker;
  /** The host's own queue's worker (activities only), when the worker has a host. */
  hostWorker?: Worker;
  /** The host, as its activities know it (its own queue, workspace root, lost-after setting). */
  host?: WorkerHost;
  /** Runs both workers until they are shut down (the shared one's shutdown stops both). */
  run(): Promise<void>;
  connection: NativeConnection;
  tracing?: Tracing;
  /** Where the workflow code came from, for the start line. */
  workflowCode: string;
}

export async function createCadreWorker(options: CadreWorkerOptions): Promise<CadreWorker> {
  const { address, tls, apiKey, metadata } = options;
  const dataConverter = cadreDataConverter();
  // Traces need the workflow interceptors in the bundle: a bundle passed in (tests) has none, and a
  // traced worker bundles at start rather than use a prebuilt one.
  const tracing = options.workflowBundle ? undefined : await tracingFromEnv();
  const prebuilt = options.workflowBundle || tracing ? undefined : prebuiltBundle();
  const bundle = options.workflowBundle ?? (prebuilt && { codePath: prebuilt.codePath });
  const connection = await NativeConnection.connect({ address, ...(tls !== undefined && { tls }), ...(apiKey !== undefined && { apiKey }), ...(metadata !== undefined && { metadata }) });
  try {
    const shared = options.taskQueue ?? taskQueue();
    const identity = options.host === undefined ? {} : { identity: `${process.pid}@${options.host}` };
    // One blob store for every workspace, e.g. on a volume all workers share; else each workspace's .cadre/blobs.
    const workspaces = process.env.CADRE_WORKSPACES || undefined;
    const lostAfterMs = hostLostAfterMs();
    const host: WorkerHost | undefined =
      options.host === undefined
        ? undefined
        : { name: options.host, taskQueue: hostTaskQueue(options.host, shared), ...(workspaces && { workspaces }), ...(lostAfterMs !== undefined && { lostAfterMs }) };
    const activities = createActivities({
      blobDir: process.env.CADRE_BLOB_DIR || undefined,
      ...(host && { host }),
      ...options.activityDeps,
    });
    const common = {
      connection,
      namespace: options.namespace,
      ...identity,
      // Payload encryption when keys are configured (src/codec); the same keys must reach every client.
      ...(dataConverter && { dataConverter }),
      // Let running tools finish on Ctrl-C before the worker goes.
      shutdownGraceTime: '10s',
      // Heartbeats reach the server at least every 2 s, so a team worker's stuck detection (10 s by
      // default) tells a long tool that still beats from a silent one.
      maxHeartbeatThrottleInterval: '2s',
      // Both queues' workers are the same version: a pinned run's host activities go to its build.
      ...(options.version && { workerDeploymentOptions: deploymentOptions(options.version) }),
    } satisfies Partial<WorkerOptions>;
    const worker = await Worker.create({
      ...common,
      taskQueue: shared,
      ...(bundle ? { workflowBundle: bundle } : { workflowsPath: require.resolve('../workflows') }),
      activities,
      sinks: auditSinks(options.auditDir),
      ...(tracing && { plugins: [tracing.plugin] }),
      ...options.overrides,
    });
    const hostWorker = host && (await Worker.create({ ...common, taskQueue: host.taskQueue, activities, ...(tracing && { plugins: [tracing.plugin] }) }));
    const run = async () => {
      if (!hostWorker) return worker.run();
      // The host's queue lives as long as the shared one: a shutdown of either stops the other.
      const stopOther = (other: Worker) => () => {
        if (other.getState() === 'RUNNING') other.shutdown();
      };
      await Promise.all([worker.run().finally(stopOther(hostWorker)), hostWorker.run().finally(stopOther(worker))]);
    };
    const workflowCode = options.workflowBundle ? 'a bundle passed in' : prebuilt ? (prebuilt.source === 'build' ? "the build's prebuilt bundle" : `${prebuilt.codePath} (CADRE_WORKFLOW_BUNDLE)`) : 'bundled at start';
    return { worker, run, connection, workflowCode, ...(hostWorker && { hostWorker, host }), ...(tracing && { tracing }) };
  } catch (err) {
    await connection.close();
    throw err;
  }
}
