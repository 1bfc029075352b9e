/**
 * 5 SIGKILLs of the Temporal server itself, at seeded points, with runs in every kind of work (a
 * new run starts before each kill, so older runs are further along). The
 * server is a file-backed dev server of the test's own (the shared one is in memory); after each
 * kill it restarts on the same port and database. The worker process and the client stay up
 * through every outage: every run must complete, no completed step may run again, and the worker
 * must not have exited.
 */
import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CadreClient } from '../../src/client/client';
import { startDevServer, type TemporalServer } from '../../src/worker/dev-server';
import { freePort, isPortFree } from '../../src/worker/ports';
import { kill, startWorkerProcess, tempWorkspace, uniqueId } from '../support/harness';
import { faultSeed, prng } from '../support/random';
import { answerQuestions, type KilledRun, killOutcome, killPlan } from './kill-runs';

const KILLS = 5;

/** Ports that the next calls of `freePort` hand out instead of a free one: a port taken after it was found free. */
const mockTakenPorts: number[] = [];
jest.mock('../../src/worker/ports', () => {
  const actual = jest.requireActual('../../src/worker/ports');
  return { ...actual, freePort: () => (mockTakenPorts.length > 0 ? Promise.resolve(mockTakenPorts.shift()) : actual.freePort()) };
});
const SEED = faultSeed(0x5e7e7);

/** SIGKILLs the server and waits until its ports are free again. */
async function killServer(server: TemporalServer, ports: number[]): Promise<number> {
  if (!server.pid) throw new Error('the test needs the temporal CLI (the SDK-downloaded server gives no process to kill)');
  process.kill(server.pid, 'SIGKILL');
  const killedAt = Date.now();
  for (;;) {
    const free = await Promise.all(ports.map(isPortFree));
    if (free.every(Boolean)) return killedAt;
    await sleep(50);
  }
}

describe('server SIGKILLs', () => {
  test('a port taken between being found free and the server binding it: the server starts again on others', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const taken = (holder.address() as net.AddressInfo).port;
    const said: string[] = [];
    mockTakenPorts.push(taken);
    try {
      const server = await startDevServer({ dataDir: mkdtempSync(path.join(os.tmpdir(), 'cadre-port-taken-')), ephemeral: true, log: (line) => said.push(line) });
      try {
        expect(mockTakenPorts).toEqual([]);
        expect(server.address).not.toBe(`127.0.0.1:${taken}`);
        expect(said.join('\n')).toContain('a port was taken meanwhile, starting again on others');
      } finally {
        await server.stop();
      }
    } finally {
      holder.close();
    }
  });

  test(`${KILLS} kills of the Temporal server: every run completes, no completed step runs again`, async () => {
    const random = prng(SEED);
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cadre-server-kills-'));
    const port = await freePort();
    const uiPort = await freePort();
    // The same ports again, or the worker and client could not find it. A port the kill left may be
    // held a moment longer (another process's outgoing connection can take it too): ask again for 10 s.
    const start = async () => {
      for (const deadline = Date.now() + 10_000; ; ) {
        try {
          return await startDevServer({ dataDir, port, uiPort, strictPorts: true });
        } catch (err) {
          if (!/address already in use/.test((err as Error).message) || Date.now() > deadline) throw err;
          await sleep(500);
        }
      }
    };
    const began = Date.now();
    let server = await start();
    const taskQueue = uniqueId('server-kills');
    const worker = await startWorkerProcess(taskQueue, { CADRE_TEST_ADDRESS: server.address, CADRE_TEST_NAMESPACE: server.namespace });
    let workerExit: string | undefined;
    worker.once('exit', (code, signal) => {
      workerExit = `worker exited (${code ?? signal}) during the outages`;
    });
    const client = await CadreClient.connect({ address: server.address, namespace: server.namespace });
    const runs: KilledRun[] = [];
    const startRun = async () => {
      const workspace = tempWorkspace();
      const { workflowId } = await client.start(killPlan(workspace), {}, { workflowId: uniqueId('server-kills'), taskQueue });
      runs.push({ id: workflowId, workspace });
    };
    const outages: number[] = [];
    const answers = answerQuestions(client, runs);
    try {
      for (let kills = 0; kills < KILLS; kills++) {
        await startRun();
        await sleep(random.between(1500, 5000));
        const killedAt = await killServer(server, [port, uiPort]);
        // Down for a while: polls, completions and heartbeats all fail meanwhile.
        await sleep(random.between(500, 3000));
        server = await start();
        outages.push(Date.now() - killedAt);
      }
      const outcome = await killOutcome(client, runs);
      await answers.stop();
      process.stdout.write(
        `server kills: ${outages.length}/${KILLS}, outages ${outages.map((ms) => (ms / 1000).toFixed(1)).join('/')} s, ` +
          `${outcome.summary}, took ${Math.round((Date.now() - began) / 1000)} s, seed ${SEED}\n`,
      );
      expect(runs).toHaveLength(KILLS);
      expect(workerExit).toBeUndefined();
      expect(outcome.statuses).toEqual(runs.map(() => 'completed'));
      expect(outcome.completedRerun).toEqual([]);
    } finally {
      await answers.stop();
      await kill(worker, 'SIGTERM');
      await client.close();
      await server.stop();
    }
  }, 10 * 60_000);
});
