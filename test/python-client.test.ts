/**
 * cadre from Python with nothing of cadre installed: examples/clients/run_plan.py (Temporal's
 * Python SDK only) starts a plan from its file, answers what it asks with the `answer` update and
 * reads the `diagnostics` query, as docs/protocol.md shows.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Worker } from '@temporalio/worker';
import { pythonWithTemporal } from './support/python';
import { step, tempWorkspace, uniqueId, withWorker } from './support/harness';

const SCRIPT = path.join(__dirname, '..', 'examples', 'clients', 'run_plan.py');
let python: string;

beforeAll(async () => {
  python = await pythonWithTemporal((line) => process.stderr.write(`${line}\n`));
}, 360_000);

async function runPython(taskQueue: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, TEMPORAL_ADDRESS: process.env.CADRE_TEST_ADDRESS, CADRE_TASK_QUEUE: taskQueue };
  return promisify(execFile)(python, [SCRIPT, ...args], { env, timeout: 60_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );
}

test('Python starts a plan from its file, answers its question and gets the result; then forks it with the documented input', async () => {
  const ws = tempWorkspace();
  const planFile = path.join(ws, 'greet.yaml');
  writeFileSync(
    planFile,
    `name: from-python
workspace: .
inputs:
  who: { type: string }
steps:
  - { id: confirm, ask: { question: "Greet {{ inputs.who }}?", choices: [yes, no] } }
  - { id: greet, dependsOn: [confirm], tool: shell, with: { command: "echo hello {{ inputs.who }} > greeting.txt && cat greeting.txt" } }
output: "{{ steps.greet.output.stdout }}"
`,
  );
  await withWorker(async (h) => {
    const id = uniqueId('python');
    const { code, stdout, stderr } = await runPython(h.taskQueue, [planFile, '--id', id, '--input', 'who=Ada', '--answer', 'confirm=yes']);
    expect({ code, stderr }).toEqual({ code: 0, stderr: 'answered confirm: Greet Ada?\n' });
    expect(JSON.parse(stdout)).toEqual({ status: 'completed', output: 'hello Ada\n', steps: ['confirm:completed', 'greet:completed'] });
    const d = await h.client.diagnostics(id);
    expect(step(d, 'confirm').status).toBe('completed');
    expect(d.plan).toBe('from-python');
    // Its history replays: the document is validated by an activity, whose result opens a workflow task of its own
    // (a local activity's could end the first task on replay, and the run's patches missed their markers: about half failed).
    await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string } }, await h.client.client.workflow.getHandle(id).fetchHistory(), id);
    // A fork of it from the greeting, with the documented input: the question names who, so given Bob it is asked again.
    const fork = uniqueId('python-fork');
    const forked = await runPython(h.taskQueue, ['--fork-from', id, '--from-step', 'greet', '--input', 'who=Bob', '--answer', 'confirm=yes', '--id', fork]);
    expect({ code: forked.code, stderr: forked.stderr }).toEqual({ code: 0, stderr: 'answered confirm: Greet Bob?\n' });
    expect(JSON.parse(forked.stdout)).toEqual({ status: 'completed', output: 'hello Bob\n', steps: ['confirm:completed', 'greet:completed'] });
    expect((await h.client.diagnostics(fork)).forkedFrom).toEqual({ run: id, step: 'greet' });
  });
});

test('Python gets every problem of a plan that does not validate', async () => {
  const ws = tempWorkspace();
  const planFile = path.join(ws, 'broken.yaml');
  writeFileSync(planFile, 'name: broken\nsteps:\n  - { id: a, tool: shell, with: { command: "true" }, dependsOn: [ghost] }\n');
  await withWorker(async (h) => {
    const { code, stdout } = await runPython(h.taskQueue, [planFile, '--id', uniqueId('python-bad')]);
    expect(code).toBe(1);
    const result = JSON.parse(stdout);
    expect(result.status).toBe('failed');
    expect(result.reason).toContain('steps[0].dependsOn[0]: unknown step "ghost"');
  });
});
