/**
 * Signals from outside cadre (`temporal workflow signal`, as the Web UI's "Send a Signal" sends
 * them): answer, pause, resume and approve do what the updates do; a signal that cannot apply is
 * recorded in diagnostics.errors with the reason, and the run goes on.
 */
import { execFile } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { findTemporalCli } from '../src/worker/temporal-cli';
import { compile, startPlan, step, tempWorkspace, waitUntil, fileWorker } from './support/harness';

// One worker for the file's runs, each its own plan and workflow id (harness.ts, fileWorker).
const withFileWorker = fileWorker('tq-signals');

async function signal(workflowId: string, name: string, input?: unknown): Promise<void> {
  const cli = await findTemporalCli({ build: false });
  if (!cli) throw new Error('the temporal CLI is not in the cache (the test setup builds it)');
  const args = ['workflow', 'signal', '--address', process.env.CADRE_TEST_ADDRESS as string, '--workflow-id', workflowId, '--name', name];
  await promisify(execFile)(cli, input === undefined ? args : [...args, '--input', JSON.stringify(input)]);
}

test('answer, pause and resume by signal; signals that cannot apply are recorded and the run goes on', async () => {
  const ws = tempWorkspace();
  const plan = compile(
    `
name: signals
steps:
  - { id: confirm, ask: { question: "Go?", choices: [yes, no] } }
  - { id: after, dependsOn: [confirm], tool: shell, with: { command: "echo {{ steps.confirm.output }}" } }
`,
    ws,
  );
  await withFileWorker(async (h) => {
    const id = await startPlan(h, plan);
    await waitUntil(h, id, (d) => d.waiting.length === 1);
    await signal(id, 'answer', { waitId: 'confirm', value: 'maybe' });
    await signal(id, 'answer', { waitId: 'nothing', value: 'yes' });
    await signal(id, 'answer', 'not even an object');
    let d = await waitUntil(h, id, (x) => x.errors.length === 3);
    expect(d.errors).toEqual([
      { step: 'confirm', message: 'signal answer not applied: "maybe" is not one of: yes, no' },
      { step: 'nothing', message: 'signal answer not applied: nothing waits for "nothing" (waiting: confirm)' },
      { step: '(signal)', message: 'signal answer not applied: the answer needs the id of what waits (waitId)' },
    ]);
    expect(d.status).toBe('waiting');
    await signal(id, 'pause');
    await waitUntil(h, id, (x) => x.paused);
    await signal(id, 'answer', { waitId: 'confirm', value: 'yes' });
    d = await waitUntil(h, id, (x) => step(x, 'confirm').status === 'completed');
    // Paused: the next step does not start until the run resumes.
    expect(step(d, 'after').status).toBe('pending');
    await signal(id, 'resume');
    d = await h.client.result(id);
    expect(d.status).toBe('completed');
    expect(step(d, 'after').status).toBe('completed');
    expect(d.errors).toHaveLength(3);
  });
});

test('approve by signal, and deny with a reason the agent reads', async () => {
  const ws = tempWorkspace();
  // A scripted model that checks what it is told: the denial and its reason, then the approved write's result.
  writeFileSync(
    path.join(ws, 'agent.yaml'),
    `turns:
  - reply: { toolCalls: [{ name: fs_write, args: { path: first.txt, content: one } }] }
  - expect: { lastRole: tool, lastContains: "denied by a person: not this one" }
    reply: { toolCalls: [{ name: fs_write, args: { path: second.txt, content: two } }] }
  - expect: { lastRole: tool, lastContains: "second.txt" }
    reply: { text: "wrote second.txt" }
`,
  );
  const plan = compile(
    `
name: approve-signal
steps:
  - { id: write, agent: { prompt: write, model: "scripted:agent.yaml", tools: [fs.write], approvals: { fs.write: ask } } }
output: "{{ steps.write.output }}"
`,
    ws,
  );
  await withFileWorker(async (h) => {
    const id = await startPlan(h, plan);
    await waitUntil(h, id, (d) => d.waiting.some((w) => w.id === 'write/call-1.1'));
    await signal(id, 'approve', { waitId: 'write/call-1.1', approve: false, reason: 'not this one' });
    await waitUntil(h, id, (d) => d.waiting.some((w) => w.id === 'write/call-2.1'));
    await signal(id, 'approve', { waitId: 'write/call-2.1' });
    const d = await h.client.result(id);
    expect([d.status, d.output]).toEqual(['completed', 'wrote second.txt']);
    expect(existsSync(path.join(ws, 'first.txt'))).toBe(false);
    expect(existsSync(path.join(ws, 'second.txt'))).toBe(true);
  });
});
