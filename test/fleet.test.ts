/**
 * A fleet on one machine: `cadre worker` processes as hosts (CADRE_HOST), each polling the shared
 * task queue and a queue of its own; `cadre workers` lists them as Temporal sees them.
 */
import { HOST_LOST_AFTER_MS, hostState, listHosts } from '../src/client/hosts';
import { CadreClient } from '../src/client/client';
import { hostTaskQueue } from '../src/protocol/task-queue';
import { hostName } from '../src/worker/host-name';
import { runCadre, startCadreWorker, testServerEnv } from './support/cli';
import { tempWorkspace, uniqueId } from './support/harness';

describe('hosts', () => {
  test('a host is named by CADRE_HOST, else the machine; a name that cannot be part of a queue is refused', () => {
    expect(hostName({ CADRE_HOST: 'build-1.eu' })).toBe('build-1.eu');
    expect(hostName({})).toMatch(/^[A-Za-z0-9]/);
    expect(() => hostName({ CADRE_HOST: 'a b' })).toThrow(/^CADRE_HOST must be 1-100 letters, digits/);
    expect(() => hostName({ CADRE_HOST: '-x' })).toThrow(/CADRE_HOST/);
    expect(hostTaskQueue('build-1', 'cadre')).toBe('cadre@build-1');
  });

  test('up while its own queue is polled, lost after two idle long polls without, shared-only with no queue of its own', () => {
    const now = 1_000_000;
    expect(hostState(1, now - 5_000, now)).toBe('up');
    expect(hostState(1, now - HOST_LOST_AFTER_MS - 1, now)).toBe('lost');
    expect(hostState(0, 0, now)).toBe('shared-only');
  });

  test('two workers as two hosts: each polls its own queue, and cadre workers lists both', async () => {
    const dir = tempWorkspace();
    const shared = uniqueId('fleet');
    const [alpha, beta] = [uniqueId('alpha'), uniqueId('beta')];
    const env = (host: string) => ({ ...testServerEnv(), CADRE_TASK_QUEUE: shared, CADRE_HOST: host });
    const workers = await Promise.all([startCadreWorker([], dir, env(alpha)), startCadreWorker([], dir, env(beta))]);
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
    try {
      expect(workers[0].stderr()).toContain(`"host":"${alpha}","hostTaskQueue":"${shared}@${alpha}"`);
      const hosts = await listHosts(client.connection, client.server.namespace, shared);
      expect(hosts.map((h) => [h.host, h.taskQueue, h.state, h.pollers])).toEqual(
        [alpha, beta].sort().map((host) => [host, `${shared}@${host}`, 'up', { shared: 1, own: 1 }]),
      );
      const listed = await runCadre(['workers', '--task-queue', shared], dir, testServerEnv());
      expect(listed.code).toBe(0);
      const lines = listed.stdout.trim().split('\n');
      expect(lines[0]).toMatch(/^HOST\s+STATE\s+OWN QUEUE\s+PROCESSES\s+OWN POLLERS\s+LAST POLL OF OWN QUEUE$/);
      expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 5))).toEqual([alpha, beta].sort().map((host) => [host, 'up', `${shared}@${host}`, '1', '1']));
      // Nothing polls a queue no worker was started on.
      expect(await runCadre(['workers', '--task-queue', uniqueId('nobody')], dir, testServerEnv())).toMatchObject({ code: 0, stdout: expect.stringMatching(/^no worker polls task queue/) });
    } finally {
      await client.close();
      await Promise.all(workers.map((w) => w.stop()));
    }
  });

  test('a worker with a host name that cannot be part of a queue does not start', async () => {
    const result = await runCadre(['worker'], tempWorkspace(), { ...testServerEnv(), CADRE_HOST: 'no spaces' });
    expect(result).toMatchObject({ code: 2, stderr: expect.stringContaining('CADRE_HOST must be 1-100 letters, digits') });
  });
});
