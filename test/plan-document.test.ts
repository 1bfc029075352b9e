/**
 * Any Temporal client can start a plan: `runPlan` takes the plan document itself (the JSON of a
 * plan file, or its text) with inputs, started here by the `temporal` CLI. The worker validates it
 * before the first step; a document that does not validate ends the run as failed with every
 * problem and its path, and no workflow task ever fails.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { WorkflowFailedError } from '@temporalio/client';
import type { PlanResult } from '../src/protocol/definitions';
import { findTemporalCli } from '../src/worker/temporal-cli';
import { writeFileSync } from 'node:fs';
import { type Harness, compile, startPlan, step, tempWorkspace, uniqueId, waitUntil, fileWorker } from './support/harness';
import { failedTasks } from './support/history';

// One worker for the file's runs, each its own plan and workflow id (harness.ts, fileWorker).
const withFileWorker = fileWorker('tq-plan-document');

/** Starts `runPlan` (or another type) with the `temporal` CLI, as a person or a script without cadre would. */
async function startWithTemporalCli(h: Harness, workflowId: string, input: unknown, type = 'runPlan'): Promise<void> {
  const cli = await findTemporalCli({ build: false });
  if (!cli) throw new Error('the temporal CLI is not in the cache (the test setup builds it)');
  await promisify(execFile)(cli, [
    'workflow', 'start', '--address', process.env.CADRE_TEST_ADDRESS as string,
    '--task-queue', h.taskQueue, '--type', type, '--workflow-id', workflowId,
    '--input', JSON.stringify(input),
  ]);
}

async function failureOf(h: Harness, workflowId: string): Promise<{ message: string; type?: string; nonRetryable?: boolean; details?: unknown[] }> {
  const error = await h.client.client.workflow.getHandle(workflowId).result().then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(error instanceof WorkflowFailedError)) throw new Error(`expected the run to fail, got ${String(error)}`);
  const cause = error.cause as { message: string; type?: string; nonRetryable?: boolean; details?: unknown[] };
  return cause;
}

/** The workflow tasks that failed, each with its cause and message (a failing test says why). */
async function workflowTaskFailures(h: Harness, workflowId: string): Promise<string[]> {
  const history = await h.client.client.workflow.getHandle(workflowId).fetchHistory();
  return failedTasks(history.events ?? []);
}

test('the temporal CLI starts a plan from its document, with inputs; the run is found by its plan name', async () => {
  const ws = tempWorkspace();
  const document = {
    name: 'from-anywhere',
    workspace: ws,
    inputs: { who: { type: 'string' }, times: { type: 'number', default: 2 } },
    steps: [
      { id: 'greet', tool: 'fs.write', with: { path: 'hello.txt', content: 'hello {{ inputs.who }} x{{ inputs.times }}' } },
      { id: 'read', dependsOn: ['greet'], tool: 'fs.read', with: { path: 'hello.txt' } },
    ],
    output: '{{ steps.read.output.content }}',
  };
  await withFileWorker(async (h) => {
    const workflowId = uniqueId('document');
    // A string input for a number, as `--input times=3` gives it.
    await startWithTemporalCli(h, workflowId, { document, inputs: { who: 'temporal CLI', times: '3' } });
    const result = (await h.client.client.workflow.getHandle(workflowId).result()) as PlanResult;
    expect(result.status).toBe('completed');
    expect(result.output).toBe('hello temporal CLI x3');
    expect(readFileSync(path.join(ws, 'hello.txt'), 'utf8')).toBe('hello temporal CLI x3');
    const d = await h.client.diagnostics(workflowId);
    expect(d.plan).toBe('from-anywhere');
    expect(step(d, 'read').status).toBe('completed');
    const listed = await h.client.list({ plan: 'from-anywhere' });
    expect(listed.map((run) => run.workflowId)).toContain(workflowId);
    expect(await workflowTaskFailures(h, workflowId)).toEqual([]);
  });
});

test('the document may be the text of a YAML plan file; relative paths resolve against baseDir', async () => {
  const ws = tempWorkspace();
  const document = `
name: yaml-text
workspace: .
steps:
  - id: write
    tool: fs.write
    with: { path: out.txt, content: "{{ inputs.n }}" }
inputs:
  n: { type: number }
`;
  await withFileWorker(async (h) => {
    const workflowId = uniqueId('document-yaml');
    await startWithTemporalCli(h, workflowId, { document, inputs: { n: 7 }, baseDir: ws });
    const result = (await h.client.client.workflow.getHandle(workflowId).result()) as PlanResult;
    expect(result.status).toBe('completed');
    expect(readFileSync(path.join(ws, 'out.txt'), 'utf8')).toBe('7');
  });
});

test('a document that does not validate fails the run with every problem and its path, without workflow-task failures', async () => {
  const cases: { input: unknown; expected: string[] }[] = [
    {
      input: {
        document: {
          name: 'broken',
          steps: [
            { id: 'a', tool: 'shell', with: { command: 'true' }, retires: 3 },
            { id: 'b', dependsOn: ['nope'], tool: 'shell', with: { command: 'true' } },
          ],
        },
      },
      expected: ['steps[0].retires: unknown field "retires"', 'steps[1].dependsOn[0]: unknown step "nope"'],
    },
    {
      input: { document: { name: 'needs-input', inputs: { n: { type: 'number' } }, steps: [{ id: 'a', tool: 'shell', with: { command: 'echo {{ inputs.n }}' } }] }, inputs: { n: 'many', extra: 1 } },
      expected: ['inputs.extra: plan "needs-input" has no input "extra"', 'inputs.n: expected a number, got "many"'],
    },
    { input: { document: 'name: [unclosed' }, expected: ['document'] },
    { input: { document: 42 }, expected: ['a plan is a map with at least "name" and "steps"; this holds a number'] },
    { input: { document: { name: 'x', steps: [] }, baseDir: 'relative/dir', inputs: [] }, expected: ['baseDir: must be an absolute path on the worker', 'inputs: must be a map of input names to values'] },
  ];
  await withFileWorker(async (h) => {
    for (const { input, expected } of cases) {
      const workflowId = uniqueId('document-bad');
      await startWithTemporalCli(h, workflowId, input);
      const failure = await failureOf(h, workflowId);
      expect(failure.type).toBe('InvalidPlan');
      expect(failure.nonRetryable).toBe(true);
      expect(failure.message).toMatch(/^the plan document is not valid:\n/);
      for (const text of expected) expect(failure.message).toContain(text);
      // The problems come as data too, for clients that show them their own way.
      const issues = (failure.details?.[0] as { issues: { path: string; message: string }[] }).issues;
      expect(issues.length).toBeGreaterThanOrEqual(expected.length);
      expect(await workflowTaskFailures(h, workflowId)).toEqual([]);
      const d = await h.client.diagnostics(workflowId);
      expect(d.status).toBe('failed');
      // Any client's query says the same.
      const queried = (await h.client.client.workflow.getHandle(workflowId).query('diagnostics')) as { status: string; reason: string };
      expect(queried).toMatchObject({ status: 'failed', reason: failure.message });
    }
  });
});

test('the workflow bundle holds neither the validator nor the YAML parser: the worker validates documents', () => {
  const bundle = readFileSync(process.env.CADRE_TEST_BUNDLE as string, 'utf8');
  const modules = new Set(bundle.match(/node_modules\/(@[a-z0-9-]+\/)?[a-z0-9.-]+/g) ?? []);
  expect(modules).toContain('node_modules/@temporalio/workflow');
  expect([...modules].filter((m) => /\/(zod|yaml)$/.test(m))).toEqual([]);
});

test('every workflow type refuses bad input from the temporal CLI with a failure naming the field, never a failed workflow task', async () => {
  const agent = { step: 's', prompt: 'p', workspace: '/tmp', action: { kind: 'agent', agent: { prompt: 'p', tools: [], maxTurns: 3, approvals: {}, approvalTimeout: '1m' } } };
  const cases: [string, unknown, string][] = [
    ['runPlan', null, 'the input: null, expected an object'],
    ['runPlan', [1, 2], 'the input: a list, expected an object'],
    ['runPlan', { plan: { name: 'x', workspace: '/tmp', inputs: {}, steps: [{ id: 1 }] }, inputs: {} }, 'plan.steps[0].id: a number, expected text'],
    ['runPlan', { plan: { name: 'x', workspace: '/tmp', inputs: {}, steps: [] }, inputs: 'n=1' }, 'inputs: a string, expected an object'],
    ['agentTask', null, 'the input: null, expected an object'],
    ['agentTask', { ...agent, action: { kind: 'agent' } }, 'action.agent: missing'],
    ['agentTask', { ...agent, action: { kind: 'code' } }, 'action.kind: a string, expected one of agent, decide'],
    ['agentTask', { ...agent, prompt: undefined }, 'prompt: missing'],
    ['session', 'hello', 'the input: a string, expected an object'],
    ['session', { tools: ['shell'], approvals: {}, workspace: '/tmp', maxTurns: 'many' }, 'maxTurns: a string, expected a number'],
    ['runItems', {}, 'step: missing'],
  ];
  await withFileWorker(async (h) => {
    const ids = cases.map(([type]) => uniqueId(`bad-${type}`));
    await Promise.all(cases.map(([type, input], i) => startWithTemporalCli(h, ids[i], input, type)));
    for (const [i, [type, , problem]] of cases.entries()) {
      const failure = await failureOf(h, ids[i]);
      expect({ type: failure.type, nonRetryable: failure.nonRetryable, message: failure.message }).toEqual({ type: 'BadWorkflowInput', nonRetryable: true, message: `${type}: bad input: ${problem}` });
      expect(await workflowTaskFailures(h, ids[i])).toEqual([]);
    }
  });
});

/** Sends a signal with the `temporal` CLI: anyone who can reach the server can. */
async function signalWithTemporalCli(workflowId: string, name: string, input: unknown): Promise<void> {
  const cli = await findTemporalCli({ build: false });
  if (!cli) throw new Error('the temporal CLI is not in the cache (the test setup builds it)');
  await promisify(execFile)(cli, ['workflow', 'signal', '--address', process.env.CADRE_TEST_ADDRESS as string, '--workflow-id', workflowId, '--name', name, '--input', JSON.stringify(input)]);
}

/** Sends an update with the `temporal` CLI and waits for its result. */
async function updateWithTemporalCli(workflowId: string, name: string, input: unknown): Promise<string> {
  const cli = await findTemporalCli({ build: false });
  if (!cli) throw new Error('the temporal CLI is not in the cache (the test setup builds it)');
  const { stdout } = await promisify(execFile)(cli, ['workflow', 'update', 'execute', '--address', process.env.CADRE_TEST_ADDRESS as string, '--workflow-id', workflowId, '--name', name, '--input', JSON.stringify(input)]);
  return stdout;
}

test('malformed signals from the temporal CLI are dropped and malformed updates rejected: no workflow task fails, and the run goes on', async () => {
  const ws = tempWorkspace();
  const scenario = path.join(ws, 'worker.yaml');
  writeFileSync(
    scenario,
    JSON.stringify({
      turns: [
        { reply: { toolCalls: [{ name: 'fs_write', args: { path: 'a.txt', content: 'hi' } }] } },
        { reply: { toolCalls: [{ name: 'signal_state', args: { state: 'completing', reason: 'wrote it', result: 'ok' } }] } },
      ],
    }),
  );
  const plan = compile(`name: bad-signals\nteam: {}\nsteps:\n  - { id: w, agent: { prompt: write, model: "scripted:${scenario}", tools: [fs.write], approvals: { fs.write: ask } } }\n`, ws);
  await withFileWorker(async (h) => {
    const id = await startPlan(h, plan);
    const waiting = await waitUntil(h, id, (d) => d.waiting.length > 0);
    const agentId = step(waiting, 'w').agent?.workflowId as string;
    const toRun: [string, unknown][] = [
      ['agentWaits', null],
      ['agentWaits', { workflowId: agentId, waits: 'none' }],
      ['workerState', null],
      ['workerState', { workflowId: agentId, seq: 'next', from: 'running', to: 'completed' }],
      ['teamLearned', null],
      ['teamQuestion', null],
      ['answer', null],
      ['approve', [1, 2]],
      // The run's stream (Workflow Streams' publish signal): anyone can send it too.
      ['__temporal_workflow_stream_publish', null],
      ['__temporal_workflow_stream_publish', { items: 'x', publisher_id: 'p', sequence: 1 }],
      ['__temporal_workflow_stream_publish', { items: [{ topic: 'events', data: '!!not base64 protobuf!!' }], publisher_id: 'p', sequence: 2 }],
    ];
    const toAgent: [string, unknown][] = [
      ['agentAnswer', null],
      ['agentAnswer', ['approve']],
      ['teamReply', null],
    ];
    for (const [name, input] of toRun) await signalWithTemporalCli(id, name, input);
    for (const [name, input] of toAgent) await signalWithTemporalCli(agentId, name, input);
    // Updates have someone to answer: a malformed one is rejected, naming what is wrong, before it reaches history.
    for (const target of [id, agentId]) {
      for (const input of [null, [1], { waitId: 7 }]) {
        const rejected = await updateWithTemporalCli(target, 'answer', input).then(
          () => 'accepted',
          (err: { stderr?: string }) => err.stderr ?? String(err),
        );
        expect(rejected).toMatch(/waitId/);
      }
    }
    for (const input of [null, { topics: 'events', from_offset: 0 }, { topics: [], from_offset: -1 }]) {
      const rejected = await updateWithTemporalCli(id, '__temporal_workflow_stream_poll', input).then(
        () => 'accepted',
        (err: { stderr?: string }) => err.stderr ?? String(err),
      );
      expect(rejected).toMatch(/from_offset/);
    }
    // Still waiting for its approval, with nothing changed by the noise.
    const after = await h.client.diagnostics(id);
    expect(after.waiting.map((w) => w.kind)).toEqual(waiting.waiting.map((w) => w.kind));
    await h.client.answer(id, after.waiting[0].id, 'approve');
    const d = await h.client.result(id);
    expect(d.status).toBe('completed');
    expect(readFileSync(path.join(ws, 'a.txt'), 'utf8')).toBe('hi');
    expect(await workflowTaskFailures(h, id)).toEqual([]);
    expect(await workflowTaskFailures(h, agentId)).toEqual([]);
  });
});
