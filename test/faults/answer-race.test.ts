/**
 * Answers are first-come, exactly once: many valid answers sent at once to one question, and
 * exactly one is accepted and used; every other one is told which answer won.
 *
 * On a real server, two ways: live (a worker polls while the answers arrive) and queued (they
 * arrive while no worker polls, and are taken when one starts again). A second question keeps the
 * run open, so the race is between the answers, not with the run's end. The server decides how
 * many updates share a workflow task; the case where several do (every validator runs before the
 * first answer's waiter wakes) is driven directly below, where it cannot depend on that choice.
 */
import { CadreClient, CadreError } from '../../src/client/client';
import { HumanWaits } from '../../src/workflows/plan/waits';
import { compile, startPlan, startWorker, step, tempWorkspace, uniqueId, waitUntil, type Harness } from '../support/harness';

const ANSWERS = 20;
const TRIALS: ('live' | 'queued')[] = ['live', 'queued', 'live', 'queued', 'live', 'queued'];

const plan = compile(
  `
name: answer-race
steps:
  - { id: question, ask: { question: "Which one?" } }
  - { id: hold, dependsOn: [question], ask: { question: "Done?" } }
output: "{{ steps.question.output }}"
`,
  tempWorkspace(),
);

/** A worker that can be stopped and started again on the same task queue. */
async function startPolling(taskQueue: string) {
  const { worker, connection } = await startWorker(taskQueue);
  const running = worker.run();
  return async () => {
    worker.shutdown();
    await running;
    await connection.close();
  };
}

async function trial(h: Harness, mode: 'live' | 'queued'): Promise<number> {
  let stop = await startPolling(h.taskQueue);
  try {
    const id = await startPlan(h, plan);
    await waitUntil(h, id, (d) => d.waiting.some((w) => w.id === 'question'));
    if (mode === 'queued') await stop();
    const values = Array.from({ length: ANSWERS }, (_, i) => `answer-${mode}-${i}`);
    const sent = Promise.allSettled(values.map((value) => h.client.answer(id, 'question', value)));
    if (mode === 'queued') {
      // Let every answer reach the server before a worker can take any of them.
      await new Promise((r) => setTimeout(r, 1000));
      stop = await startPolling(h.taskQueue);
    }
    const outcomes = await sent;
    const accepted = values.filter((_, i) => outcomes[i].status === 'fulfilled');
    expect({ mode, accepted: accepted.length }).toEqual({ mode, accepted: 1 });
    for (const outcome of outcomes) {
      if (outcome.status === 'fulfilled') continue;
      expect(outcome.reason).toBeInstanceOf(CadreError);
      expect((outcome.reason as Error).message).toBe(`"question" was already answered with "${accepted[0]}"`);
    }
    await waitUntil(h, id, (d) => d.waiting.some((w) => w.id === 'hold'));
    await h.client.answer(id, 'hold', 'yes');
    const final = await h.client.result(id);
    expect(final.status).toBe('completed');
    expect(final.output).toBe(accepted[0]);
    expect(step(final, 'question').status).toBe('completed');
    return accepted.length;
  } finally {
    await stop();
  }
}

/** These waits are answered, never waited on: no patch is asked. */
const NO_PATCHES = { has: (id: string): boolean => { throw new Error(`patch ${id} asked outside a workflow`); } };

describe('the answer race', () => {
  test('answers delivered in one workflow task: the first closes the wait, so later validators reject', () => {
    const waits = new HumanWaits(true, () => undefined, NO_PATCHES);
    waits.openWait({ id: 'q', kind: 'ask', prompt: 'Which one?' });
    const accepted: string[] = [];
    for (let i = 0; i < ANSWERS; i++) {
      try {
        waits.validate('q', `answer-${i}`);
        waits.accept('q', `answer-${i}`);
        accepted.push(`answer-${i}`);
      } catch (err) {
        expect((err as Error).message).toBe('"q" was already answered with "answer-0"');
      }
    }
    expect(accepted).toEqual(['answer-0']);
    expect(waits.list()).toEqual([]);
    // Before this rule (runs recorded earlier replay with it), every one of them was accepted.
    const legacy = new HumanWaits(false, () => undefined, NO_PATCHES);
    legacy.openWait({ id: 'q', kind: 'ask', prompt: 'Which one?' });
    expect(() => ['a', 'b'].forEach((v) => (legacy.validate('q', v), legacy.accept('q', v)))).not.toThrow();
  });

  test(`${ANSWERS} concurrent answers to one question: exactly one accepted, and it is the one used`, async () => {
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
    const h: Harness = { client, taskQueue: uniqueId('tq') };
    try {
      const tally: string[] = [];
      for (const mode of TRIALS) tally.push(`${mode} ${await trial(h, mode)}`);
      process.stdout.write(`answer race: ${TRIALS.length} trials of ${ANSWERS} concurrent answers, accepted per trial: ${tally.join(', ')}\n`);
    } finally {
      await client.close();
    }
  });

  test('answers that race the end of the run are told it ended, never an SDK error', async () => {
    const closing = compile(
      `
name: answer-race-end
steps:
  - { id: question, ask: { question: "Which one?" } }
`,
      tempWorkspace(),
    );
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
    const h: Harness = { client, taskQueue: uniqueId('tq') };
    const stop = await startPolling(h.taskQueue);
    try {
      const id = await startPlan(h, closing);
      await waitUntil(h, id, (d) => d.waiting.some((w) => w.id === 'question'));
      const outcomes = await Promise.allSettled(Array.from({ length: ANSWERS }, (_, i) => h.client.answer(id, 'question', `a${i}`)));
      const winners = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [`a${i}`] : []));
      expect(winners).toHaveLength(1);
      for (const outcome of outcomes) {
        if (outcome.status === 'fulfilled') continue;
        expect(outcome.reason).toBeInstanceOf(CadreError);
        expect([`"question" was already answered with "${winners[0]}"`, `run ${id} already ended: completed`]).toContain((outcome.reason as Error).message);
      }
      expect((await h.client.result(id)).output).toBeUndefined();
    } finally {
      await stop();
      await client.close();
    }
  });
});
