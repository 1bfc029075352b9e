/**
 * Worker SIGKILLs at random points (12, or 20 with CADRE_FAULTS=full): runs start in waves so kills land in activities, local
 * activities, loops, timers and questions; after each kill a new worker process takes over.
 * Every run must complete, and no step or item whose completion was recorded may run again.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CadreClient } from '../../src/client/client';
import { kill, prepareWorkerProcess, startWorkerProcess, tempWorkspace, uniqueId } from '../support/harness';
import { faultSeed, prng } from '../support/random';
import { answerQuestions, type KilledRun, killOutcome, killPlan } from './kill-runs';

/** 20 with CADRE_FAULTS=full; CI's 12 minutes take 12 (each kill costs a worker's start, about 4 s). */
const KILLS = process.env.CADRE_FAULTS === 'full' ? 20 : 12;
const RUNS = 6;
/** Runs started before the first kill; one more after every few kills. */
const FIRST_WAVE = 2;
const SEED = faultSeed(0x6b1115);

describe('worker SIGKILLs', () => {
  test(`${KILLS} kills at random points: every run completes, no completed step runs again`, async () => {
    const random = prng(SEED);
    const taskQueue = uniqueId('kills');
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
    const began = Date.now();
    let worker = await startWorkerProcess(taskQueue);
    // The next worker, made ready while the last one works: it takes over as soon as the kill is done.
    let next = prepareWorkerProcess(taskQueue);
    const runs: KilledRun[] = [];
    const startRun = async () => {
      const workspace = tempWorkspace();
      const { workflowId } = await client.start(killPlan(workspace), {}, { workflowId: uniqueId('kills'), taskQueue });
      runs.push({ id: workflowId, workspace });
    };
    const answers = answerQuestions(client, runs);
    try {
      for (let i = 0; i < FIRST_WAVE; i++) await startRun();
      let kills = 0;
      for (; kills < KILLS; kills++) {
        await sleep(random.between(1000, 4000));
        const ready = await next;
        await kill(worker, 'SIGKILL');
        worker = await ready.run();
        if (kills < KILLS - 1) next = prepareWorkerProcess(taskQueue);
        if (runs.length < RUNS && kills % Math.ceil(KILLS / (RUNS - FIRST_WAVE + 1)) === 0) await startRun();
      }
      const outcome = await killOutcome(client, runs);
      await answers.stop();
      process.stdout.write(`worker kills: ${kills}/${KILLS}, ${outcome.summary}, took ${Math.round((Date.now() - began) / 1000)} s, seed ${SEED}\n`);
      expect(runs).toHaveLength(RUNS);
      expect(outcome.statuses).toEqual(runs.map(() => 'completed'));
      expect(outcome.completedRerun).toEqual([]);
    } finally {
      await answers.stop();
      await kill(worker, 'SIGTERM');
      await next.then((held) => kill(held.child, 'SIGTERM'), () => undefined);
      await client.close();
    }
  }, 15 * 60_000);
});
