/**
 * Step outputs over 64 KiB live outside history, and nothing about a plan changes: conditions,
 * loops, questions and templates read them as before, and `result` gives them back whole.
 */
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { isStored } from '../src/plan-format/refs';
import { compile, startPlan, step, tempWorkspace, waitUntil, fileWorker } from './support/harness';
import { payloadSizes } from './support/history';

// One worker for the file's runs, each its own plan and workflow id (harness.ts, fileWorker).
const withFileWorker = fileWorker('tq-stored-outputs');

const ITEMS = 300;

describe('outputs stored outside history', () => {
  test('when, forEach, ask, templates and result read stored outputs; history stays small', async () => {
    const ws = tempWorkspace();
    // ~100 KiB of JSON on stdout: stored, with `count` kept inline.
    writeFileSync(
      path.join(ws, 'gen.js'),
      `const items = Array.from({ length: ${ITEMS} }, (_, i) => ({ name: 'item-' + i, pad: 'x'.repeat(300) }));
process.stdout.write(JSON.stringify({ count: items.length, items }));`,
    );
    const plan = compile(
      `
name: stored-outputs
steps:
  - { id: big, tool: shell, with: { command: "node gen.js" } }
  - { id: check, when: "steps.big.output.json.items[0].name == 'item-0'", tool: shell, with: { command: "echo checked" } }
  - { id: never, when: "steps.big.output.json.items[1].name == 'item-0'", tool: shell, with: { command: "echo never" } }
  - id: each
    forEach: "{{ steps.big.output.json.items }}"
    as: it
    concurrency: 20
    tool: fs.write
    with: { path: "out/{{ index }}.txt", content: "{{ it.name }}" }
  - id: confirm
    dependsOn: [each]
    ask: { question: "Last is {{ steps.big.output.json.items[${ITEMS - 1}].name }} of {{ steps.big.output.json.count }}?", choices: [yes, no] }
  - { id: copy, dependsOn: [confirm], tool: fs.write, with: { path: copy.json, content: "{{ steps.big.output.json }}" } }
output:
  count: "{{ steps.big.output.json.count }}"
  stdout: "{{ steps.big.output.stdout }}"
  last: "{{ steps.each.output[${ITEMS - 1}].path }}"
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const id = await startPlan(h, plan);
      const waiting = await waitUntil(h, id, (d) => d.waiting.length > 0, 120_000);
      expect(waiting.waiting[0].prompt).toBe(`Last is item-${ITEMS - 1} of ${ITEMS}?`);
      await h.client.answer(id, 'confirm', 'yes');
      const d = await h.client.result(id);
      expect(d.status).toBe('completed');
      expect(step(d, 'check').status).toBe('completed');
      expect(step(d, 'never')).toMatchObject({ status: 'skipped' });
      expect(step(d, 'each').items).toEqual({ total: ITEMS, completed: ITEMS });
      expect(readdirSync(path.join(ws, 'out'))).toHaveLength(ITEMS);
      expect(readFileSync(path.join(ws, 'out', `${ITEMS - 1}.txt`), 'utf8')).toBe(`item-${ITEMS - 1}`);
      const generated = JSON.parse(readFileSync(path.join(ws, 'copy.json'), 'utf8')) as { count: number; items: unknown[] };
      expect(generated.count).toBe(ITEMS);
      expect(generated.items).toHaveLength(ITEMS);
      // `result` reads the stored stdout back; the raw record holds a reference in its place.
      expect(d.output).toEqual({ count: ITEMS, stdout: JSON.stringify(generated), last: `out/${ITEMS - 1}.txt` });
      const raw = await h.client.result(id, { readStored: false });
      expect(isStored((raw.output as { stdout: unknown }).stdout)).toBe(true);
      const history = await h.client.client.workflow.getHandle(id).fetchHistory();
      const payloads = payloadSizes(history);
      const outputBytes = JSON.stringify(generated).length;
      // Without the store, the ~100 KiB stdout and json would each be payloads of the step's result.
      expect(Math.max(...payloads)).toBeLessThan(outputBytes / 4);
      process.stdout.write(
        `stored outputs: ${outputBytes} bytes of output; largest payload in history ${Math.max(...payloads)} bytes, all payloads ${payloads.reduce((a, b) => a + b, 0)} bytes\n`,
      );
    });
  });

  test('a JSON stdout cut at the limit says so, and a step that reads its json fails with the path', async () => {
    const ws = tempWorkspace();
    // 9 MiB of JSON: past the 8 MiB a stream keeps.
    writeFileSync(path.join(ws, 'huge.js'), `process.stdout.write(JSON.stringify({ items: Array.from({ length: 300000 }, (_, i) => 'item-' + i + '-' + 'y'.repeat(20)) }));`);
    const plan = compile(
      `
name: cut-json
steps:
  - { id: huge, tool: shell, with: { command: "node huge.js" } }
  - { id: reader, tool: fs.write, with: { path: first.txt, content: "{{ steps.huge.output.json.items[0] }}" } }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('failed');
      expect(step(d, 'huge').status).toBe('completed');
      expect(step(d, 'reader')).toMatchObject({ status: 'failed', attempts: 0 });
      expect(step(d, 'reader').error).toBe(
        '{{ steps.huge.output.json.items[0] }} reads nothing: steps.huge.output has no .json (the output was cut short: see its "truncated" field); add | default(...) where a missing value is fine',
      );
    });
  });
});
