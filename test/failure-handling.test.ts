import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { compile, startPlan, step, tempWorkspace, waitUntil, fileWorker } from './support/harness';
import { uniqueSleep, untilProcesses } from './support/processes';

// One worker for the file's runs, each its own plan and workflow id (harness.ts, fileWorker).
const withFileWorker = fileWorker('tq-failure-handling');

describe('failure strategies', () => {
  test('onFailure: skip lets downstream run', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: skip-failure
steps:
  - { id: broken, onFailure: skip, retry: { maximumAttempts: 2, initialInterval: 100ms }, tool: shell, with: { command: "exit 3" } }
  - { id: after, dependsOn: [broken], tool: shell, with: { command: "echo ran" } }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('completed');
      expect(step(d, 'broken')).toMatchObject({ status: 'skipped', attempts: 2, error: expect.stringContaining('ShellExit: command exited with code 3') });
      expect(step(d, 'after').status).toBe('completed');
      expect(d.errors).toEqual([{ step: 'broken', message: expect.stringContaining('exited with code 3') }]);
    });
  });

  test('onFailure: ask waits for a decision, then retries from the failed step', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: ask-on-failure
steps:
  - { id: first, tool: shell, with: { command: "echo once >> first.log" } }
  - id: needsFile
    dependsOn: [first]
    onFailure: ask
    retry: { maximumAttempts: 1 }
    tool: shell
    with: { command: "cat ready.txt" }
output: "{{ steps.needsFile.output.stdout }}"
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const id = await startPlan(h, plan);
      const waiting = await waitUntil(h, id, (d) => d.waiting.length > 0);
      expect(waiting.status).toBe('waiting');
      expect(waiting.waiting[0]).toMatchObject({ id: 'needsFile', kind: 'failure', choices: ['retry', 'skip', 'abort'] });
      expect(step(waiting, 'needsFile')).toMatchObject({ status: 'waiting', attempts: 1 });
      writeFileSync(path.join(ws, 'ready.txt'), 'fixed');
      await h.client.answer(id, 'needsFile', 'retry');
      const d = await h.client.result(id);
      expect(d.status).toBe('completed');
      expect(d.output).toBe('fixed');
      expect(step(d, 'needsFile').attempts).toBe(2);
      // The run resumed at the failed step: the first step ran once.
      expect(readFileSync(path.join(ws, 'first.log'), 'utf8')).toBe('once\n');
    });
  });

  test('onTimeout: skip skips a step that runs past its timeout', async () => {
    const ws = tempWorkspace();
    const nap = uniqueSleep(20);
    const plan = compile(
      `
name: timeout-skip
steps:
  - { id: slow, timeout: 1s, onTimeout: skip, tool: shell, with: { command: "sleep ${nap}; touch finished" } }
  - { id: napping, timeout: 500ms, onTimeout: skip, tool: sleep, with: { duration: 1h } }
  - { id: after, dependsOn: [slow, napping], tool: shell, with: { command: "echo after" } }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const started = Date.now();
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('completed');
      expect(step(d, 'slow')).toMatchObject({ status: 'skipped', note: 'skipped after timeout', error: expect.stringContaining('timed out') });
      expect(step(d, 'napping')).toMatchObject({ status: 'skipped', note: 'skipped after timeout' });
      expect(step(d, 'after').status).toBe('completed');
      expect(Date.now() - started).toBeLessThan(15_000);
      expect(existsSync(path.join(ws, 'finished'))).toBe(false);
      // The timed-out command was killed, not left running.
      await untilProcesses(['sleep', nap], (pids) => pids.length === 0, 15_000);
    });
  });

  test('abort fails the run and compensates completed steps in reverse order', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: abort-compensate
steps:
  - { id: one, tool: shell, with: { command: "echo one >> log" }, compensate: { tool: shell, with: { command: "echo undo-one >> log" } } }
  - { id: two, dependsOn: [one], tool: shell, with: { command: "echo two >> log" }, compensate: { tool: shell, with: { command: "echo undo-{{ steps.two.output.exitCode }}-two >> log" } } }
  - { id: boom, dependsOn: [two], retry: { maximumAttempts: 1 }, tool: shell, with: { command: "exit 1" } }
  - { id: never, dependsOn: [boom], tool: shell, with: { command: "echo never >> log" } }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('failed');
      expect(step(d, 'boom').status).toBe('failed');
      expect(step(d, 'never')).toMatchObject({ status: 'cancelled', note: 'not started: plan aborted' });
      expect(d.compensations).toEqual([
        { step: 'two', status: 'completed' },
        { step: 'one', status: 'completed' },
      ]);
      expect(readFileSync(path.join(ws, 'log'), 'utf8')).toBe('one\ntwo\nundo-0-two\nundo-one\n');
    });
  });

  test('a permanent tool error is not retried', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: permanent
steps:
  - { id: escape, onFailure: skip, tool: fs.read, with: { path: "../../etc/passwd" } }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(step(d, 'escape')).toMatchObject({ status: 'skipped', attempts: 1, error: expect.stringContaining('OutsideWorkspace') });
    });
  });

  test('a template that reads a missing value fails its step with the path; default() fills it in', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: missing-values
steps:
  - { id: data, tool: shell, with: { command: "echo '{\\"items\\": [1, 2]}'" } }
  - { id: alert, when: "false", tool: shell, with: { command: "echo alert" } }
  - { id: safe, tool: shell, with: { command: "echo {{ steps.alert.output.stdout | default('no-alert') }}-{{ steps.data.output.json.count | default(0) }}" } }
  - { id: typo, onFailure: skip, tool: shell, with: { command: "echo {{ steps.data.output.json.itms }} > never" } }
output: "{{ steps.safe.output.stdout }}"
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('completed');
      expect(step(d, 'safe').status).toBe('completed');
      expect(step(d, 'typo')).toMatchObject({ status: 'skipped', attempts: 0 });
      expect(step(d, 'typo').error).toContain('{{ steps.data.output.json.itms }} reads nothing: steps.data.output.json has no .itms');
      expect(existsSync(path.join(ws, 'never'))).toBe(false);
      expect(d.output).toBe('no-alert-0\n');
    });
  });

  test("a plan output that cannot be read fails the run with the reason instead of hanging", async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: bad-output
steps:
  - { id: skipped, when: "false", tool: shell, with: { command: "echo hi" } }
output: "{{ steps.skipped.output.stdout }}"
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('failed');
      expect(d.reason).toBe(
        "the plan's output cannot be read: {{ steps.skipped.output.stdout }} reads nothing: steps.skipped.output is empty, so it has no .stdout (step \"skipped\" is skipped); add | default(...) where a missing value is fine",
      );
      expect(d.steps.map((s) => s.status)).toEqual(['skipped']);
    });
  });
});
