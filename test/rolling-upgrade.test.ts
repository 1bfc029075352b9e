/**
 * Rolling upgrades with Temporal's Worker Versioning (docs/operations.md): workers of two builds of
 * one deployment side by side on one host, as the upgrade recipe has them. A plan run started on the
 * old build finishes there while new runs go to the new one, and a team run moves to it; each
 * history replays.
 */
import { realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { CadreClient } from '../src/client/client';
import { findTemporalCli } from '../src/worker/temporal-cli';
import { auditSinks } from '../src/worker/audit-log';
import { workerVersion } from '../src/worker/deployment';
import { runCadre, startCadreWorker, testServerEnv } from './support/cli';
import { tempWorkspace, uniqueId } from './support/harness';
import { until } from './support/until';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const PLAN = (name: string, team = '') => `name: ${name}
${team}steps:
  - { id: hold, ask: { question: "Go on?", choices: [yes] } }
  - { id: after, dependsOn: [hold], tool: shell, with: { command: "echo done" } }
`;

test('a build and a deployment are names; a deployment needs a build', () => {
  expect(workerVersion({})).toBeUndefined();
  expect(workerVersion({ CADRE_BUILD_ID: '1.4.0+abc' })).toEqual({ deploymentName: 'cadre', buildId: '1.4.0+abc' });
  expect(() => workerVersion({ CADRE_BUILD_ID: 'a b' })).toThrow(/^CADRE_BUILD_ID must be 1-100 letters/);
  expect(() => workerVersion({ CADRE_DEPLOYMENT: 'x' })).toThrow(/CADRE_DEPLOYMENT needs CADRE_BUILD_ID/);
});

test('two builds side by side on a host: a plan run started on the old build finishes there, new runs go to the current build, a team run moves to it', async () => {
  const root = realpathSync(tempWorkspace());
  writeFileSync(path.join(root, 'upgrade.yaml'), PLAN('upgrade'));
  writeFileSync(path.join(root, 'team.yaml'), PLAN('upgrade-team', 'team: {}\n'));
  const shared = uniqueId('upgrade');
  const deployment = uniqueId('deploy');
  const host = uniqueId('host');
  const env = (build: string) => ({ ...testServerEnv(), CADRE_TASK_QUEUE: shared, CADRE_HOST: host, CADRE_BUILD_ID: build, CADRE_DEPLOYMENT: deployment });
  const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
  const namespace = 'default';
  const current = async () => (await client.connection.workflowService.describeWorkerDeployment({ namespace, deploymentName: deployment }).catch(() => undefined))?.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId;
  const version = async (id: string) => {
    const info = (await client.client.workflow.getHandle(id).describe()).raw.workflowExecutionInfo?.versioningInfo;
    return [info?.behavior, info?.deploymentVersion?.buildId];
  };
  const old = await startCadreWorker([], root, env('v1'));
  let next: Awaited<ReturnType<typeof startCadreWorker>> | undefined;
  const [first, second, team] = [uniqueId('upgrade-old'), uniqueId('upgrade-new'), uniqueId('upgrade-team')];
  try {
    // The deployment's first build becomes its current one on its own.
    // (The worker says so just after the server has it: wait for both.)
    await until('v1 current', async () => ((await current()) === 'v1' ? true : undefined), 30_000);
    await until('v1 says it made itself current', () => (old.stderr().includes(`build v1 of deployment ${deployment}: made the current build (the deployment had none)`) ? true : undefined), 30_000);
    expect(await runCadre(['run', 'upgrade.yaml', '--id', first, '--task-queue', shared], root, testServerEnv())).toMatchObject({ code: 0 });
    await until('the first run waiting', async () => ((await client.diagnostics(first)).status === 'waiting' ? true : undefined));
    // 1 = PINNED in Temporal's enum.
    expect(await version(first)).toEqual([1, 'v1']);
    // A team run may last days: it moves to the current build (2 = AUTO_UPGRADE), its patches replaying what came before.
    expect(await runCadre(['run', 'team.yaml', '--id', team, '--task-queue', shared], root, testServerEnv())).toMatchObject({ code: 0 });
    await until('the team run waiting', async () => ((await client.diagnostics(team)).status === 'waiting' ? true : undefined));
    expect(await version(team)).toEqual([2, 'v1']);

    // The new build starts beside the old one on the same host; it serves no run until it is made current.
    next = await startCadreWorker([], root, env('v2'));
    await until('v2 says it is not current', () => (next!.stderr().includes(`build v2 of deployment ${deployment}: not the current build`) ? true : undefined), 30_000);
    const temporal = (await findTemporalCli()) as string;
    const promote = ['worker', 'deployment', 'set-current-version', '--deployment-name', deployment, '--build-id', 'v2', '--yes', '--address', process.env.CADRE_TEST_ADDRESS as string];
    // Refused until the server has seen v2 poll every queue v1 does (the shared one and the host's): as an operator would, ask again.
    await until('v2 made current', () => promisify(execFile)(temporal, promote).then(() => true, (err: Error) => (/missing active task queues/.test(err.message) ? undefined : Promise.reject(err))), 30_000, 500);
    expect(await current()).toBe('v2');

    expect(await runCadre(['run', 'upgrade.yaml', '--id', second, '--task-queue', shared], root, testServerEnv())).toMatchObject({ code: 0 });
    await until('the second run waiting', async () => ((await client.diagnostics(second)).status === 'waiting' ? true : undefined));
    expect(await version(second)).toEqual([1, 'v2']);
    for (const id of [first, second, team]) await client.answer(id, 'hold', 'yes');
    for (const id of [first, second, team]) {
      await until(`${id} completed`, async () => ((await client.diagnostics(id)).status === 'completed' ? true : undefined));
    }
    // Each run's tasks went to its own build's worker to the end: the old run's last step ran on the old build.
    expect(await version(first)).toEqual([1, 'v1']);
    expect(await version(team)).toEqual([2, 'v2']);
    const [v1, v2] = [`${old.child.pid}@${host}`, `${next.child.pid}@${host}`];
    for (const [id, workers] of [[first, [v1]], [second, [v2]], [team, [v1, v2]]] as const) {
      const history = await client.client.workflow.getHandle(id).fetchHistory();
      const identities = (history.events ?? []).flatMap((e) => [e.workflowTaskCompletedEventAttributes?.identity, e.activityTaskCompletedEventAttributes?.identity]).filter(Boolean);
      expect([...new Set(identities)]).toEqual(workers);
      // The team run's step after the switch ran on the new build.
      if (id === team) expect(identities.at(-1)).toBe(v2);
      await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string }, sinks: auditSinks(tempWorkspace()) }, history, id);
    }
  } finally {
    await client.close();
    await Promise.all([old.stop(), next?.stop()]);
  }
}, 180_000);
