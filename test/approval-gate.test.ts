/**
 * Approvals under command rules, on the dev server with a fake OpenAI server: a person sees the
 * whole call (a command far longer than the old 2,000-character prompt), `always` grants exactly
 * the call shown, an agent retried asks again and is answered normally, and two calls of one turn
 * that share an id both run.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { modelSettings } from '../src/providers/config';
import { currentDetails } from '../src/protocol/details';
import type { Diagnostics } from '../src/protocol/definitions';
import { type FakeModelServer, type RecordedRequest, startFakeModelServer } from './support/fake-model-server';
import { runCadre, testServerEnv } from './support/cli';
import { type Harness, compile, startPlan, tempWorkspace, waitUntil, withWorker } from './support/harness';

let server: FakeModelServer;

// A server per test: a test that fails half-way leaves no scripted replies for the next.
beforeEach(async () => {
  server = await startFakeModelServer();
});
afterEach(() => server.close());

function withAgents<T>(fn: (h: Harness) => Promise<T>): Promise<T> {
  const models = modelSettings({}, { OPENAI_API_KEY: 'sk-test-gate-0f3a', OPENAI_BASE_URL: server.baseURL });
  return withWorker(fn, { activityDeps: { models } });
}

function toolResults(request: RecordedRequest): Record<string, string> {
  const messages = request.body.messages as { role: string; content?: unknown; tool_call_id?: string }[];
  return Object.fromEntries(messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id as string, String(m.content)]));
}

const waitingFor = (h: Harness, id: string, waitId: string) => waitUntil(h, id, (d: Diagnostics) => d.waiting.some((w) => w.id === waitId));

test('a long command is shown whole: in diagnostics, cadre status and the Web UI details, with what each part runs', async () => {
  const ws = tempWorkspace();
  // 3,000 characters of harmless echo, then the tail that matters.
  const head = `echo ${'a'.repeat(3000)}`;
  const command = `${head} && touch tail-ran`;
  const plan = compile(
    `
name: gate-long
steps:
  - id: run
    agent:
      prompt: go
      model: openai:gpt-4o-mini
      tools: [shell]
      approvals: { shell: { rules: [{ prefix: [echo], decision: allow }], otherwise: ask } }
`,
    ws,
  );
  server.enqueue({ toolCalls: [{ id: 'long', name: 'shell', args: { command } }] }, { text: 'done' });
  await withAgents(async (h) => {
    const id = await startPlan(h, plan);
    const d = await waitingFor(h, id, 'run/call-1.1');
    const wait = d.waiting[0];
    expect(wait.detail?.command).toBe(command);
    expect(wait.detail?.segments).toEqual([
      // Each part's text is clipped for history; the command above is whole.
      { text: `${head.slice(0, 500)}…`, decision: 'allow', rule: 'echo: allow' },
      { text: 'touch tail-ran', decision: 'ask', rule: 'otherwise' },
    ]);
    expect(wait.detail?.reason).toBe('`touch tail-ran` needs a person: no rule names it (otherwise: ask)');
    const status = await runCadre(['status', id], ws, testServerEnv());
    expect(status.stdout).toContain(`      │ ${command}\n`);
    expect(status.stdout).toContain('ask   touch tail-ran  (otherwise)');
    const details = currentDetails({ workflowId: id, status: 'waiting', total: 1, counts: { pending: 0, running: 0, waiting: 1, completed: 0, failed: 0, skipped: 0, cancelled: 0 }, steps: d.steps, waiting: d.waiting });
    expect(details).toContain(`\n${command}\n`);
    await h.client.answer(id, 'run/call-1.1', 'deny:no');
    expect((await h.client.result(id)).status).toBe('completed');
    expect(existsSync(path.join(ws, 'tail-ran'))).toBe(false);
  });
});

test('always grants exactly the call shown: the same call runs again without asking, another one asks', async () => {
  const ws = tempWorkspace();
  const plan = compile(
    `
name: gate-always
steps:
  - { id: a, agent: { prompt: go, model: "openai:gpt-4o-mini", tools: [shell], approvals: { shell: ask } } }
`,
    ws,
  );
  server.enqueue(
    { toolCalls: [{ id: 'one', name: 'shell', args: { command: 'echo x >> log' } }] },
    { toolCalls: [{ id: 'again', name: 'shell', args: { command: 'echo x >> log' } }] },
    { toolCalls: [{ id: 'other', name: 'shell', args: { command: 'echo x >> log; rm log' } }] },
    { text: 'done' },
  );
  await withAgents(async (h) => {
    const id = await startPlan(h, plan);
    await waitingFor(h, id, 'a/call-1.1');
    await h.client.answer(id, 'a/call-1.1', 'always');
    // The identical call of turn 2 runs at once; the longer one of turn 3 waits for a person.
    await waitingFor(h, id, 'a/call-3.1');
    expect(readFileSync(path.join(ws, 'log'), 'utf8')).toBe('x\nx\n');
    await h.client.answer(id, 'a/call-3.1', 'deny');
    expect((await h.client.result(id)).status).toBe('completed');
    expect(existsSync(path.join(ws, 'log'))).toBe(true);
  });
});

test('a step retried after an approved call asks again, and the new approval is answered normally', async () => {
  const ws = tempWorkspace();
  const plan = compile(
    `
name: gate-retry
steps:
  - { id: a, onFailure: ask, agent: { prompt: go, model: "openai:gpt-4o-mini", tools: [shell], approvals: { shell: ask }, maxTurns: 2 } }
`,
    ws,
  );
  // Run 1: the first call is approved, the second denied, then the agent is out of turns and the
  // step fails; a person answers retry, and run 2 asks the first call again, under the same id.
  server.enqueue(
    { toolCalls: [{ id: 'c', name: 'shell', args: { command: 'echo run >> runs' } }] },
    { toolCalls: [{ id: 'c2', name: 'shell', args: { command: 'echo more' } }] },
    { toolCalls: [{ id: 'c', name: 'shell', args: { command: 'echo run >> runs' } }] },
    { text: 'done' },
  );
  await withAgents(async (h) => {
    const id = await startPlan(h, plan);
    await waitingFor(h, id, 'a/call-1.1');
    await h.client.answer(id, 'a/call-1.1', 'approve');
    await waitingFor(h, id, 'a/call-2.1');
    await h.client.answer(id, 'a/call-2.1', 'deny');
    const failed = await waitUntil(h, id, (d) => d.waiting.some((w) => w.kind !== 'approval'));
    await h.client.answer(id, failed.waiting[0].id, 'retry');
    const again = await waitUntil(h, id, (d) => d.waiting.some((w) => w.id === 'a/call-1.1') && readFileSyncSafe(path.join(ws, 'runs')) === 'run\n');
    expect(again.waiting.find((w) => w.id === 'a/call-1.1')?.detail?.command).toBe('echo run >> runs');
    await h.client.answer(id, 'a/call-1.1', 'approve');
    const d = await h.client.result(id);
    expect(d.status).toBe('completed');
    expect(readFileSync(path.join(ws, 'runs'), 'utf8')).toBe('run\nrun\n');
  });
});

test('two calls of one turn with the same id both run, and the model gets both results', async () => {
  const ws = tempWorkspace();
  const plan = compile(
    `
name: gate-ids
steps:
  - { id: a, agent: { prompt: go, model: "openai:gpt-4o-mini", tools: [shell] } }
`,
    ws,
  );
  server.enqueue(
    {
      toolCalls: [
        { id: 'same', name: 'shell', args: { command: 'echo one > one.txt; echo ONE' } },
        { id: 'same', name: 'shell', args: { command: 'echo two > two.txt; echo TWO' } },
      ],
    },
    { text: 'done' },
  );
  await withAgents(async (h) => {
    const id = await startPlan(h, plan);
    expect((await h.client.result(id)).status).toBe('completed');
    expect(readFileSync(path.join(ws, 'one.txt'), 'utf8')).toBe('one\n');
    expect(readFileSync(path.join(ws, 'two.txt'), 'utf8')).toBe('two\n');
    // Two ids the model can tell apart (streamed, OpenAI's client names the second itself; cadre's middleware does for the rest).
    const results = toolResults(server.requests[1]);
    const ids = Object.keys(results);
    expect(ids).toHaveLength(2);
    expect(ids).toContain('same');
    expect(results.same).toContain('ONE');
    expect(results[ids.find((i) => i !== 'same') as string]).toContain('TWO');
  });
});

test('command rules with examples that contradict them are a plan error at their path', async () => {
  const dir = tempWorkspace();
  writeFileSync(
    path.join(dir, 'plan.yaml'),
    `name: bad-examples
steps:
  - id: a
    agent:
      prompt: go
      tools: [shell]
      approvals:
        shell:
          rules:
            - { prefix: [git, push], decision: deny, match: ["git pull"], notMatch: ["cd x && git push"] }
`,
  );
  const result = await runCadre(['validate', 'plan.yaml'], dir, testServerEnv());
  expect(result.code).toBe(2);
  expect(result.stderr).toContain('steps[0].agent.approvals.shell.rules[0].match[0]: "git pull" does not match the prefix "git push"');
  expect(result.stderr).toContain('steps[0].agent.approvals.shell.rules[0].notMatch[0]: "cd x && git push" matches the prefix "git push"');
});

function readFileSyncSafe(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
