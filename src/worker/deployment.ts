/**
 * Rolling upgrades (docs/operations.md): with CADRE_BUILD_ID, a worker is a version of a Temporal
 * Worker Deployment (CADRE_DEPLOYMENT, default `cadre`), so the server sends each run's tasks to
 * workers that can replay it. Plan runs are pinned to the build they started on; sessions and team
 * runs move to the current build (workflows/index.ts), through the patches cadre already uses.
 * Unset, the worker is unversioned, as before: one machine needs no setting.
 */
import type { Connection } from '@temporalio/client';
import type { WorkerDeploymentOptions } from '@temporalio/worker';

const NAME = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$/;

export interface WorkerVersion {
  deploymentName: string;
  buildId: string;
}

/** The worker's version from CADRE_BUILD_ID and CADRE_DEPLOYMENT; undefined when unversioned. Throws on names that cannot be. */
export function workerVersion(env: NodeJS.ProcessEnv = process.env): WorkerVersion | undefined {
  const buildId = env.CADRE_BUILD_ID;
  if (!buildId) {
    if (env.CADRE_DEPLOYMENT) throw new Error('CADRE_DEPLOYMENT needs CADRE_BUILD_ID: the build this worker runs');
    return undefined;
  }
  const deploymentName = env.CADRE_DEPLOYMENT || 'cadre';
  for (const [name, value] of [['CADRE_BUILD_ID', buildId], ['CADRE_DEPLOYMENT', deploymentName]]) {
    if (!NAME.test(value)) throw new Error(`${name} must be 1-100 letters, digits, '.', '_', '+' or '-', starting with a letter or digit (got ${JSON.stringify(value)})`);
  }
  return { deploymentName, buildId };
}

/** Worker options for a version: plan runs pinned unless a workflow says otherwise. */
export function deploymentOptions(version: WorkerVersion): WorkerDeploymentOptions {
  return { useWorkerVersioning: true, version, defaultVersioningBehavior: 'PINNED' };
}

/**
 * The first build of a deployment becomes its current version, once the server has seen it poll:
 * with no current version, new runs would wait for unversioned workers that are not there. A later
 * build waits to be made current (`temporal worker deployment set-current-version`). Returns
 * whether this build is current, or undefined when it could not be told within `waitMs`.
 */
export async function currentOrFirst(connection: Connection, namespace: string, version: WorkerVersion, waitMs = 30_000): Promise<'current' | 'made current' | 'not current' | undefined> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      const { workerDeploymentInfo } = await connection.workflowService.describeWorkerDeployment({ namespace, deploymentName: version.deploymentName });
      const current = workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId;
      if (current === version.buildId) return 'current';
      if (current) return 'not current';
      await connection.workflowService.setWorkerDeploymentCurrentVersion({ namespace, deploymentName: version.deploymentName, buildId: version.buildId, identity: `cadre worker ${process.pid}` });
      return 'made current';
    } catch {
      // The deployment, or this version of it, is registered with the first poll: ask again.
      if (Date.now() > deadline) return undefined;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}
