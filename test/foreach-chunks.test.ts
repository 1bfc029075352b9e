/**
 * A forEach of more than 1,000 items runs in child workflows of 1,000 items each: every history
 * stays small, a retry runs only what did not complete, and the output reads like any list.
 */
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { FOREACH_CHILD_THRESHOLD } from '../src/plan-format/limits';
import { compile, startPlan, step, tempWorkspace, waitUntil, withWorker } from './support/harness';
import { runHistories } from './support/history';

const ITEMS = 2500;
const FAILING = 1500;
describe('long forEach loops', () => {
  test(`${ITEMS} items run in chunks of ${FOREACH_CHILD_THRESHOLD}; a failed item is retried alone; histories stay small`, async () => {
    const ws = tempWorkspace();
    // Item FAILING writes under "blocked", which is a file until the test removes it: its write fails.
    // (The list is ~60 KiB of JSON: a plain list, not a stored one; stored lists are covered in stored-outputs.)
    writeFileSync(path.join(ws, 'blocked'), 'not a directory');
    writeFileSync(
      path.join(ws, 'list.js'),
      `console.log(JSON.stringify(Array.from({ length: ${ITEMS} }, (_, n) => ({ n, dir: n === ${FAILING} ? 'blocked' : 'runs' }))));`,
    );
    const plan = compile(
      `
name: long-loop
steps:
  - { id: list, tool: shell, with: { command: "node list.js" } }
  - id: loop
    forEach: "{{ steps.list.output.json }}"
    as: it
    concurrency: 30
    onFailure: ask
    retry: { maximumAttempts: 1 }
    tool: fs.write
    with: { path: "{{ it.dir }}/{{ it.n }}.log", content: "x", append: true }
output:
  paths: "{{ steps.loop.output[*].path }}"
  last: "{{ steps.loop.output[${ITEMS - 1}].path }}"
`,
      ws,
    );
    await withWorker(async (h) => {
      const id = await startPlan(h, plan);
      const waiting = await waitUntil(h, id, (d) => d.waiting.length > 0, 180_000);
      expect(waiting.waiting[0]).toMatchObject({ id: 'loop', kind: 'failure' });
      expect(step(waiting, 'loop').items?.total).toBe(ITEMS);
      rmSync(path.join(ws, 'blocked'));
      await h.client.answer(id, 'loop', 'retry');
      const d = await h.client.result(id);
      expect(d.status).toBe('completed');
      expect(step(d, 'loop').items).toEqual({ total: ITEMS, completed: ITEMS });
      // Every item ran exactly once, the failed one included (its failed attempt wrote nothing).
      const runs = readdirSync(path.join(ws, 'runs'));
      expect(runs).toHaveLength(ITEMS - 1);
      expect(runs.every((f) => readFileSync(path.join(ws, 'runs', f), 'utf8') === 'x')).toBe(true);
      expect(readFileSync(path.join(ws, 'blocked', `${FAILING}.log`), 'utf8')).toBe('x');
      const output = d.output as { paths: string[]; last: string };
      expect(output.paths).toHaveLength(ITEMS);
      expect(output.paths[FAILING]).toBe(`blocked/${FAILING}.log`);
      expect(output.last).toBe(`runs/${ITEMS - 1}.log`);

      const histories = await runHistories(h.client.client, id);
      const children = [...histories.keys()].slice(1);
      const chunks = Math.ceil(ITEMS / FOREACH_CHILD_THRESHOLD);
      // Each chunk once, and the failed one a second time.
      expect(children).toHaveLength(chunks + 1);
      expect(children.filter((c) => c.endsWith('#2'))).toEqual([`${id}/loop/${Math.floor(FAILING / FOREACH_CHILD_THRESHOLD)}#2`]);
      // Chunks hold their workflow task open while their local activities run: a longer task timeout
      // than Temporal's 10 s gives a busy worker time to answer (bench/scale-foreach.ts).
      for (const child of children) expect(Number(histories.get(child)![0].workflowExecutionStartedEventAttributes?.workflowTaskTimeout?.seconds)).toBe(30);
      const events = [...histories.values()].map((e) => e.length);
      expect(Math.max(...events)).toBeLessThan(20_000);
      process.stdout.write(`long forEach: ${ITEMS} items in ${children.length} child runs; events: parent ${events[0]}, children ${events.slice(1).join(', ')}\n`);
    });
  });
});
