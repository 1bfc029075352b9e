/**
 * Many clients at once: 50 concurrent starts of one plan with the same inputs start it once; 50
 * with their own ids all complete; 50 runs answered concurrently each get their own answer, and a
 * second answer to each is refused.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CadreError } from '../../src/client/client';
import { compile, tempWorkspace, uniqueId, waitUntil, withWorker } from '../support/harness';

const N = 50;

describe('50 clients at once', () => {
  test('the same plan and inputs started 50 times at once runs once', async () => {
    const ws = tempWorkspace();
    const plan = compile(`name: once-only\nsteps:\n  - { id: a, tool: shell, with: { command: "echo run >> runs.log" } }\n`, ws);
    await withWorker(async (h) => {
      // The default id is derived from the plan and its inputs: every start asks for the same run.
      const starts = await Promise.allSettled(Array.from({ length: N }, () => h.client.start(plan, { }, { taskQueue: h.taskQueue })));
      const started = starts.filter((s) => s.status === 'fulfilled');
      const refused = starts.flatMap((s) => (s.status === 'rejected' ? [s.reason as Error] : []));
      expect(started).toHaveLength(1);
      for (const err of refused) {
        expect(err).toBeInstanceOf(CadreError);
        expect(err.message).toMatch(/^plan "once-only" is already running as plan-once-only-[0-9a-f]{10} /);
      }
      const { workflowId } = (started[0] as PromiseFulfilledResult<{ workflowId: string }>).value;
      expect((await h.client.result(workflowId)).status).toBe('completed');
      expect(readFileSync(path.join(ws, 'runs.log'), 'utf8')).toBe('run\n');
      process.stdout.write(`concurrent starts: ${N} of the same run, ${started.length} started, ${refused.length} told it is running\n`);
    });
  });

  test('50 runs started at once complete; 50 questions answered at once each get their own answer, once', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `name: answered\ninputs: { n: { type: number } }\nsteps:\n  - { id: q, ask: { question: "Value for {{ inputs.n }}?" } }\n  - { id: w, tool: fs.write, with: { path: "out/{{ inputs.n }}.txt", content: "{{ steps.q.output }}" } }\noutput: "{{ steps.q.output }}"\n`,
      ws,
    );
    await withWorker(async (h) => {
      const ids = await Promise.all(
        Array.from({ length: N }, async (_, n) => (await h.client.start(plan, { n }, { workflowId: uniqueId(`answered-${n}`), taskQueue: h.taskQueue })).workflowId),
      );
      await Promise.all(ids.map((id) => waitUntil(h, id, (d) => d.waiting.some((w) => w.id === 'q'), 120_000)));
      // Each run gets its answer and a second one at the same moment: one of them wins, the other is told so.
      const answers = await Promise.allSettled(ids.flatMap((id, n) => [h.client.answer(id, 'q', `answer-${n}`), h.client.answer(id, 'q', `other-${n}`)]));
      const accepted = answers.filter((a) => a.status === 'fulfilled').length;
      const refused = answers.flatMap((a) => (a.status === 'rejected' ? [a.reason as Error] : []));
      expect(accepted).toBe(N);
      // The loser is told which answer won, or, when the run ended meanwhile, that it ended.
      for (const err of refused) expect(err.message).toMatch(/^("q" was already answered with "(answer|other)-\d+"|run answered-\S+ already ended: completed)$/);
      const results = await Promise.all(ids.map((id) => h.client.result(id)));
      results.forEach((d, n) => {
        expect(d.status).toBe('completed');
        expect(d.output).toMatch(new RegExp(`^(answer|other)-${n}$`));
        expect(readFileSync(path.join(ws, 'out', `${n}.txt`), 'utf8')).toBe(d.output);
      });
      process.stdout.write(`concurrent runs: ${N} started and completed; ${N * 2} answers at once, ${accepted} accepted, ${refused.length} refused as already answered\n`);
    });
  });
});
