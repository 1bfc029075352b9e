import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { answerUpdate } from '../src/protocol/definitions';
import { compile, fileWorker, startPlan, step, tempWorkspace, waitUntil } from './support/harness';
import { patchMarkers, statusUpserts } from './support/history';

// One worker for the file's runs, each its own plan and workflow id (harness.ts, fileWorker).
const withFileWorker = fileWorker('tq-run-plan');

describe('runPlan on a real Temporal server', () => {
  test('independent branches overlap and downstream waits for both', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: parallel
steps:
  - { id: a, tool: shell, with: { command: "sleep 1; echo a" } }
  - { id: b, tool: shell, with: { command: "sleep 1; echo b" } }
  - { id: c, dependsOn: [a, b], tool: shell, with: { command: "echo c" } }
output: { joined: ["{{ steps.a.output.stdout }}", "{{ steps.b.output.stdout }}", "{{ steps.c.output.stdout }}"] }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const id = await startPlan(h, plan);
      const d = await h.client.result(id);
      expect(d.status).toBe('completed');
      const [a, b, c] = ['a', 'b', 'c'].map((s) => step(d, s));
      // Both started before either ended.
      expect(Date.parse(a.startedAt!)).toBeLessThan(Date.parse(b.endedAt!));
      expect(Date.parse(b.startedAt!)).toBeLessThan(Date.parse(a.endedAt!));
      expect(Date.parse(c.startedAt!)).toBeGreaterThanOrEqual(Math.max(Date.parse(a.endedAt!), Date.parse(b.endedAt!)));
      expect(d.output).toEqual({ joined: ['a\n', 'b\n', 'c\n'] });
    });
  });

  test('echo steps output their value, templates resolved, in loops and from stored outputs, with no activity', async () => {
    const ws = tempWorkspace();
    // About 100 KiB of stdout: stored outside history; the echo that quotes it reads it back by a local activity.
    writeFileSync(path.join(ws, 'gen.js'), `process.stdout.write(JSON.stringify({ items: Array.from({ length: 2000 }, (_, i) => ({ name: 'item-' + i, pad: 'x'.repeat(40) })) }))`);
    const plan = compile(
      `
name: echo-steps
inputs: { who: { type: string, default: world } }
steps:
  - { id: hello, echo: "hello {{ inputs.who }}" }
  - { id: shape, echo: { greeting: "{{ steps.hello.output }}", n: 3, list: [1, "{{ inputs.who }}"] } }
  - { id: each, forEach: [a, b, c], as: letter, echo: "{{ letter }}{{ index }}" }
  - { id: skipped, when: "inputs.who == 'nobody'", echo: never }
  - { id: big, tool: shell, with: { command: "node gen.js" } }
  - { id: last, echo: "{{ steps.big.output.json.items[1999].name }}" }
output: { shape: "{{ steps.shape.output }}", each: "{{ steps.each.output }}", last: "{{ steps.last.output }}" }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const id = await startPlan(h, plan);
      const d = await h.client.result(id);
      expect(d.status).toBe('completed');
      expect(d.output).toEqual({ shape: { greeting: 'hello world', n: 3, list: [1, 'world'] }, each: ['a0', 'b1', 'c2'], last: 'item-1999' });
      expect(step(d, 'skipped')).toMatchObject({ status: 'skipped' });
      expect(step(d, 'hello')).toMatchObject({ status: 'completed', attempts: 1 });
      // No activity for an echo: only the run's question of where its workspace is, the shell step's, and the local activity that read its stored output.
      const history = await h.client.client.workflow.getHandle(id).fetchHistory();
      const activities = (history.events ?? []).flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityType?.name] : []));
      expect(activities).toEqual(['locateWorkspace', 'runTool']);
    });
  });

  test('a step starts as soon as its own dependencies finish, not when its level does', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: eager
steps:
  - { id: quick, tool: shell, with: { command: "true" } }
  - { id: slow, tool: shell, with: { command: "sleep 2" } }
  - { id: afterQuick, dependsOn: [quick], tool: shell, with: { command: "true" } }
  - { id: afterSlow, dependsOn: [slow], tool: shell, with: { command: "true" } }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('completed');
      expect(Date.parse(step(d, 'afterQuick').endedAt!)).toBeLessThan(Date.parse(step(d, 'slow').endedAt!));
      expect(Date.parse(step(d, 'afterSlow').startedAt!)).toBeGreaterThanOrEqual(Date.parse(step(d, 'slow').endedAt!));
    });
  });

  test('a flaky step succeeds on its third attempt', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: flaky
steps:
  - id: flaky
    retry: { maximumAttempts: 3, initialInterval: 100ms }
    tool: shell
    with: { command: 'echo x >> tries; [ $(wc -l < tries) -ge 3 ]' }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('completed');
      expect(step(d, 'flaky').attempts).toBe(3);
      expect(readFileSync(path.join(ws, 'tries'), 'utf8').trim().split('\n')).toHaveLength(3);
    });
  });

  test('a step being retried shows its attempt and last error while it runs; activities are named after steps', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: retrying
steps:
  - id: shaky
    retry: { maximumAttempts: 3, initialInterval: 200ms }
    tool: shell
    with: { command: 'if [ ! -f failed ]; then touch failed; echo "disk full" >&2; exit 1; fi; while [ ! -f go ]; do sleep 0.1; done' }
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const id = await startPlan(h, plan);
      const d = await waitUntil(h, id, (x) => step(x, 'shaky').retrying !== undefined);
      expect(step(d, 'shaky')).toMatchObject({ status: 'running', retrying: { attempt: 2, lastFailure: 'command exited with code 1: disk full' } });
      writeFileSync(path.join(ws, 'go'), '');
      const done = await h.client.result(id);
      expect(step(done, 'shaky')).toMatchObject({ status: 'completed', attempts: 2 });
      expect(step(done, 'shaky').retrying).toBeUndefined();
      const history = await h.client.client.workflow.getHandle(id).fetchHistory();
      const ids = history.events!.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes.activityId] : []));
      expect(ids).toEqual(['workspace-host', 'shaky']);
    });
  });

  test('ask resumes with the answer', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: asking
steps:
  - id: confirm
    ask: { question: "Archive {{ inputs.count }} emails?", choices: [yes, no] }
  - id: after
    tool: shell
    with: { command: "echo answered {{ steps.confirm.output }}" }
inputs: { count: { type: number, default: 3 } }
output: "{{ steps.after.output.stdout }}"
`,
      ws,
    );
    await withFileWorker(async (h) => {
      const id = await startPlan(h, plan);
      const waiting = await waitUntil(h, id, (d) => d.status === 'waiting');
      expect(waiting.waiting).toEqual([expect.objectContaining({ id: 'confirm', kind: 'ask', prompt: 'Archive 3 emails?', choices: ['yes', 'no'] })]);
      const description = await h.client.client.workflow.getHandle(id).describe();
      expect(await description.staticDetails()).toContain('- `confirm`: ask "Archive {{ inputs.count }} emails?"');
      // The Web UI's "Current Details" say what the run waits for and how to answer.
      const metadata = await h.client.client.workflow.getHandle(id).query<{ currentDetails?: string }>('__temporal_workflow_metadata');
      expect(metadata.currentDetails).toContain(`- \`confirm\`: Archive 3 emails? [yes/no] — \`cadre answer ${id} confirm yes\``);
      await expect(h.client.answer(id, 'confirm', 'maybe')).rejects.toThrow('"maybe" is not one of: yes, no');
      // Outside clients see a final rejection, not one to retry.
      const raw = await h.client.client.workflow
        .getHandle(id)
        .executeUpdate(answerUpdate, { args: [{ waitId: 'confirm', value: 'maybe' }] })
        .catch((err: unknown) => err);
      expect(raw).toBeInstanceOf(WorkflowUpdateFailedError);
      expect((raw as WorkflowUpdateFailedError).cause).toMatchObject({ type: 'AnswerRejected', nonRetryable: true, message: '"maybe" is not one of: yes, no' });
      await h.client.answer(id, 'confirm', 'yes');
      const d = await h.client.result(id);
      expect(d.output).toBe('answered yes\n');
      // Started as running (the client sets it): upserted only as it changed; one patch marker, its baseline's.
      expect(await statusUpserts(h.client.client, id)).toEqual(['waiting', 'running', 'completed']);
      expect(await patchMarkers(h.client.client, id)).toEqual(['plan-baseline-4']);
    });
  });
});
