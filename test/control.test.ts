import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { findTemporalCli } from '../src/worker/temporal-cli';
import { compile, startPlan, step, tempWorkspace, waitUntil, fileWorker } from './support/harness';
import { until } from './support/until';

// One worker for the file's runs, each its own plan and workflow id (harness.ts, fileWorker).
const withFileWorker = fileWorker('tq-control');

const run = promisify(execFile);

/** Highest number of items running at once, from "+" / "-" lines the items wrote. */
function maxOverlap(log: string): number {
  let now = 0;
  let max = 0;
  for (const line of log.trim().split('\n')) {
    now += line.startsWith('+') ? 1 : -1;
    max = Math.max(max, now);
  }
  return max;
}

describe('conditions, loops and control', () => {
  test('when: false skips the step and downstream still runs', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: when-false
steps:
  - { id: check, tool: shell, with: { command: 'echo {"urgent": false}' } }
  - { id: alert, when: "steps.check.output.json.urgent == true", tool: shell, with: { command: "touch alerted" } }
  - { id: after, dependsOn: [alert], tool: shell, with: { command: "echo after" } }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('completed');
      expect(step(d, 'alert')).toMatchObject({ status: 'skipped', attempts: 0, note: 'when "steps.check.output.json.urgent == true" was false' });
      expect(step(d, 'after').status).toBe('completed');
    });
  });

  test('forEach keeps input order and respects concurrency', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: fan-out
inputs: { items: { type: json, default: [5, 1, 4, 2, 3, 1] } }
steps:
  - id: each
    forEach: "{{ inputs.items }}"
    as: n
    concurrency: 2
    tool: shell
    with: { command: "echo + >> overlap; sleep 0.{{ n }}; echo - >> overlap; echo '{\\"n\\": {{ n }}, \\"i\\": {{ index }}}'" }
output: "{{ steps.each.output[*].json.n }}"
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('completed');
      expect(d.output).toEqual([5, 1, 4, 2, 3, 1]);
      expect(step(d, 'each').items).toEqual({ total: 6, completed: 6 });
      expect(maxOverlap(readFileSync(path.join(ws, 'overlap'), 'utf8'))).toBe(2);
    });
  });

  test('pause holds new steps while the running one finishes; resume goes on', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: pausing
steps:
  - { id: first, tool: shell, with: { command: "while [ ! -f go ]; do sleep 0.1; done" } }
  - { id: second, dependsOn: [first], tool: shell, with: { command: "echo second" } }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const id = await startPlan(h, plan);
      await waitUntil(h, id, (d) => step(d, 'first').status === 'running');
      await h.client.pause(id);
      writeFileSync(path.join(ws, 'go'), '');
      const paused = await waitUntil(h, id, (d) => step(d, 'first').status === 'completed');
      expect(paused.status).toBe('paused');
      // Held: give the scheduler time to (wrongly) start the next step, then check it did not.
      await new Promise((r) => setTimeout(r, 1500));
      const still = await h.client.diagnostics(id);
      expect(step(still, 'second').status).toBe('pending');
      expect(await h.client.list({ status: 'paused', limit: 100 })).toEqual(expect.arrayContaining([expect.objectContaining({ workflowId: id })]));
      await h.client.resume(id);
      const d = await h.client.result(id);
      expect(d.status).toBe('completed');
      expect(step(d, 'second').status).toBe('completed');
    });
  });

  test("pause holds a forEach's next items while the running one finishes; resume runs the rest", async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: pausing-items
inputs: { items: { type: json, default: [1, 2, 3, 4] } }
steps:
  - id: each
    forEach: "{{ inputs.items }}"
    concurrency: 1
    tool: shell
    with: { command: "echo {{ index }} >> started; while [ ! -f go-{{ index }} ]; do sleep 0.1; done" }
`,
      ws,
    );
    const started = () => readFileSync(path.join(ws, 'started'), 'utf8').trim().split('\n');
    await withFileWorker(async (h) => {
      const id = await startPlan(h, plan);
      await waitUntil(h, id, (d) => step(d, 'each').status === 'running');
      await until('the first item to start', () => existsSync(path.join(ws, 'started')) || undefined, 30_000);
      await h.client.pause(id);
      writeFileSync(path.join(ws, 'go-0'), '');
      const paused = await waitUntil(h, id, (d) => step(d, 'each').items?.completed === 1);
      expect(paused.status).toBe('paused');
      // Held: give the loop time to (wrongly) start the next item, then check it did not.
      await new Promise((r) => setTimeout(r, 1500));
      expect(started()).toEqual(['0']);
      for (const i of [1, 2, 3]) writeFileSync(path.join(ws, `go-${i}`), '');
      await h.client.resume(id);
      const d = await h.client.result(id);
      expect(d.status).toBe('completed');
      expect(step(d, 'each').items).toEqual({ total: 4, completed: 4 });
      expect(started()).toEqual(['0', '1', '2', '3']);
    });
  });

  test('cancel from the temporal CLI ends the run cancelled with compensations run', async () => {
    const cli = await findTemporalCli({ build: false });
    if (!cli) throw new Error('the temporal CLI is needed for this test (run .ci/run once to build it)');
    const ws = tempWorkspace();
    const plan = compile(
      `
name: cancelling
steps:
  - { id: booked, tool: shell, with: { command: "echo booked >> log" }, compensate: { tool: shell, with: { command: "echo unbooked >> log" } } }
  - { id: confirm, dependsOn: [booked], ask: { question: "Go on?" } }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const id = await startPlan(h, plan);
      await waitUntil(h, id, (d) => d.status === 'waiting');
      expect(await h.client.list({ status: 'waiting', limit: 100 })).toEqual(expect.arrayContaining([expect.objectContaining({ workflowId: id, status: 'waiting' })]));
      await run(cli, ['workflow', 'cancel', '--address', process.env.CADRE_TEST_ADDRESS as string, '--workflow-id', id]);
      const d = await h.client.result(id);
      expect(d.status).toBe('cancelled');
      expect(step(d, 'confirm')).toMatchObject({ status: 'cancelled', note: 'run cancelled' });
      expect(d.compensations).toEqual([{ step: 'booked', status: 'completed' }]);
      expect(readFileSync(path.join(ws, 'log'), 'utf8')).toBe('booked\nunbooked\n');
      const description = await h.client.client.workflow.getHandle(id).describe();
      expect(description.status.name).toBe('CANCELLED');
    });
  });
});
