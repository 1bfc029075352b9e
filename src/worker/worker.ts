/** Builds a cadre worker: the plan workflows plus every activity, on one task queue. */
import { NativeConnection, type NativeConnectionOptions, Worker, type WorkerOptions } from '@temporalio/worker';
import { type ActivityDeps, createActivities } from '../activities';
import { auditSinks } from './audit-log';
import { cadreDataConverter } from '../codec/data-converter';
import { type Tracing, tracingFromEnv } from './tracing';
import { prebuiltBundle } from './prebuilt-bundle';

import { taskQueue } from '../client/task-queue';

export { DEFAULT_TASK_QUEUE, taskQueue } from '../client/task-queue';

export interface CadreWorkerOptions {
  address: string;
  namespace: string;
  /** TLS, API key and gRPC metadata for a production cluster (from Temporal's config file and variables). */
  tls?: NativeConnectionOptions['tls'];
  apiKey?: string;
  metadata?: Record<string, string>;
  taskQueue?: string;
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
  worker: Worker;
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
  const tracing = options.workflowBundle ? undefined : tracingFromEnv();
  const prebuilt = options.workflowBundle || tracing ? undefined : prebuiltBundle();
  const bundle = options.workflowBundle ?? (prebuilt && { codePath: prebuilt.codePath });
  const connection = await NativeConnection.connect({ address, ...(tls !== undefined && { tls }), ...(apiKey !== undefined && { apiKey }), ...(metadata !== undefined && { metadata }) });
  try {
    const worker = await Worker.create({
      connection,
      namespace: options.namespace,
      taskQueue: options.taskQueue ?? taskQueue(),
      ...(bundle ? { workflowBundle: bundle } : { workflowsPath: require.resolve('../workflows') }),
      // One blob store for every workspace, e.g. on a volume all workers share; else each workspace's .cadre/blobs.
      activities: createActivities({ blobDir: process.env.CADRE_BLOB_DIR || undefined, ...options.activityDeps }),
      sinks: auditSinks(options.auditDir),
      // Payload encryption when keys are configured (src/codec); the same keys must reach every client.
      ...(dataConverter && { dataConverter }),
      ...(tracing && { plugins: [tracing.plugin] }),
      // Let running tools finish on Ctrl-C before the worker goes.
      shutdownGraceTime: '10s',
      // Heartbeats reach the server at least every 2 s, so a team worker's stuck detection (10 s by
      // default) tells a long tool that still beats from a silent one.
      maxHeartbeatThrottleInterval: '2s',
      ...options.overrides,
    });
    const workflowCode = options.workflowBundle ? 'a bundle passed in' : prebuilt ? (prebuilt.source === 'build' ? "the build's prebuilt bundle" : `${prebuilt.codePath} (CADRE_WORKFLOW_BUNDLE)`) : 'bundled at start';
    return { worker, connection, workflowCode, ...(tracing && { tracing }) };
  } catch (err) {
    await connection.close();
    throw err;
  }
}
