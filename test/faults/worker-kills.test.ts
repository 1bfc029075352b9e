/**
 * 20 worker SIGKILLs at random points: runs start in waves so kills land in activities, local
 * activities, loops, timers and questions; after each kill a new worker process takes over.
 * Every run must complete, and no step or item whose completion was recorded may run again.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CadreClient } from '../../src/client/client';
import { kill, startWorkerProcess, tempWorkspace, uniqueId } from '../support/harness';
import { faultSeed, prng } from '../support/random';
import { answerQuestions, killPlan, rerunReport } from './kill-runs';

const KILLS = 20;
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
    const runs: { id: string; workspace: string }[] = [];
    const startRun = async () => {
      const workspace = tempWorkspace();
      const { workflowId } = await client.start(killPlan(workspace), {}, { workflowId: uniqueId('kills'), taskQueue });
      runs.push({ id: workflowId, workspace });
    };
    try {
      for (let i = 0; i < FIRST_WAVE; i++) await startRun();
      let answers = answerQuestions(client, runs.map((r) => r.id));
      let kills = 0;
      for (; kills < KILLS; kills++) {
        await sleep(random.between(1000, 4000));
        await kill(worker, 'SIGKILL');
        worker = await startWorkerProcess(taskQueue);
        if (runs.length < RUNS && kills % Math.ceil(KILLS / (RUNS - FIRST_WAVE + 1)) === 0) {
          await startRun();
          await answers.stop();
          answers = answerQuestions(client, runs.map((r) => r.id));
        }
      }
      const finals = await Promise.all(runs.map((r) => client.result(r.id)));
      await answers.stop();
      const reports = await Promise.all(runs.map((r, i) => rerunReport(client, r.id, r.workspace, finals[i])));
      const rerun = reports.flatMap((r) => r.completedRerun);
      const ranAgain = reports.reduce((n, r) => n + r.inFlightRanAgain, 0);
      const completed = finals.filter((d) => d.status === 'completed').length;
      process.stdout.write(
        `worker kills: ${kills}/${KILLS}, runs completed ${completed}/${runs.length}, completed steps re-run ${rerun.length}, ` +
          `in flight at a kill and ran again ${ranAgain}, took ${Math.round((Date.now() - began) / 1000)} s, seed ${SEED}\n`,
      );
      expect(runs).toHaveLength(RUNS);
      expect(finals.map((d) => d.status)).toEqual(runs.map(() => 'completed'));
      expect(rerun).toEqual([]);
    } finally {
      await kill(worker, 'SIGTERM');
      await client.close();
    }
  }, 15 * 60_000);
});
