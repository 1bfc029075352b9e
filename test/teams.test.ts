/**
 * Team workers on the dev server: agents that say their state with `signal_state`, a team run that
 * applies every state signal once and in order, the `CadreWorkerState` search attribute, and a
 * worker that goes quiet being marked blocked instead of done. Models are scripted (offline).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import type { AgentDiagnostics } from '../src/workflows/definitions';
import { agentDiagnosticsQuery } from '../src/workflows/definitions';
import { WorkerStateMachine, type WorkerState } from '../src/workflows/worker-state';
import { type Harness, compile, startPlan, step, tempWorkspace, waitUntil, withWorker } from './support/harness';

const scenarios = mkdtempSync(path.join(os.tmpdir(), 'cadre-team-scenarios-'));

function scenario(name: string, turns: unknown[]): string {
  const file = path.join(scenarios, `${name}.yaml`);
  writeFileSync(file, YAML.stringify({ turns }));
  return `scripted:${file}`;
}

const say = (state: string, reason: string, extra: Record<string, unknown> = {}) => ({ reply: { toolCalls: [{ name: 'signal_state', args: { state, reason, ...extra } }] } });

async function workerState(h: Harness, workflowId: string): Promise<string | undefined> {
  const description = await h.client.client.workflow.getHandle(workflowId).describe();
  return description.searchAttributes.CadreWorkerState?.[0] as string | undefined;
}

function expectedFingerprint(moves: WorkerState[]): string {
  const machine = new WorkerStateMachine();
  for (const to of moves) machine.move(to, '', 't');
  return machine.fingerprint;
}

test('a worker finishes only by saying so: completing with its result, seen by the team and the search attribute', async () => {
  const ws = tempWorkspace();
  const model = scenario('finish', [say('completing', 'wrote the plan', { result: { plan: ['a', 'b'] } })]);
  const plan = compile(`name: team-finish\nteam: {}\noutput: "{{ steps.architect.output.plan }}"\nsteps:\n  - { id: architect, agent: { role: architect, prompt: plan it, model: "${model}" } }\n`, ws);
  await withWorker(async (h) => {
    const id = await startPlan(h, plan);
    const d = await waitUntil(h, id, (x) => x.status !== 'running');
    expect(d.status).toBe('completed');
    expect(step(d, 'architect')).toMatchObject({ status: 'completed' });
    expect(d.output).toEqual(['a', 'b']);
    const agentId = step(d, 'architect').agent?.workflowId as string;
    const a: AgentDiagnostics = await h.client.client.workflow.getHandle(agentId).query(agentDiagnosticsQuery);
    expect(a.transitions.map((t) => `${t.from}>${t.to}`)).toEqual(['initializing>running', 'running>completing', 'completing>completed']);
    expect(a.transitions[1].reason).toBe('wrote the plan');
    // The team run saw every move, once and in order.
    expect(d.workers).toEqual([expect.objectContaining({ workflowId: agentId, step: 'architect', role: 'architect', state: 'completed', seq: 3, fingerprint: a.fingerprint })]);
    expect(await workerState(h, agentId)).toBe('completed');
  });
});

test('a worker that stops without signalling is reminded, then blocked (never completed) until a person answers', async () => {
  const ws = tempWorkspace();
  const silent = { reply: { text: 'I think that is all.' } };
  const model = scenario('silent', [
    silent,
    { expect: { lastContains: 'reminder 1 of 2' }, ...silent },
    { expect: { lastContains: 'reminder 2 of 2' }, ...silent },
    { expect: { lastContains: 'A person answered: finish with the summary' }, ...say('completing', 'done', { result: 'summary' }) },
  ]);
  const plan = compile(`name: team-silent\nteam: { silentTurns: 2 }\nsteps:\n  - { id: writer, agent: { prompt: write, model: "${model}" } }\n`, ws);
  await withWorker(async (h) => {
    const id = await startPlan(h, plan);
    const d = await waitUntil(h, id, (x) => x.waiting.length > 0);
    const agentId = d.workers?.[0].workflowId as string;
    expect(d.workers?.[0]).toMatchObject({ state: 'blocked', reason: 'ended 3 turns in a row without a tool call or a state signal' });
    expect(d.waiting[0]).toMatchObject({ kind: 'ask', prompt: expect.stringContaining('stopped without saying its state') });
    expect(step(d, 'writer').status).toBe('waiting');
    // Outside clients find it by the search attribute.
    await expectEventually(async () => (await listIds(h, `CadreWorkerState = "blocked"`)).includes(agentId));
    await h.client.answer(id, d.waiting[0].id, 'finish with the summary');
    const done = await waitUntil(h, id, (x) => x.status !== 'running' && x.status !== 'waiting');
    expect(done.status).toBe('completed');
    const a: AgentDiagnostics = await h.client.client.workflow.getHandle(agentId).query(agentDiagnosticsQuery);
    expect(a.transitions.map((t) => t.to)).toEqual(['running', 'blocked', 'running', 'completing', 'completed']);
    expect(done.workers?.[0]).toMatchObject({ state: 'completed', fingerprint: a.fingerprint });
  });
});

test('1,000 state signals from 10 workers reach the team run: none lost, none applied out of order', async () => {
  const ws = tempWorkspace();
  const CYCLES = 50;
  const turns = [
    ...Array.from({ length: CYCLES }, (_, i) => say('blocked', `waiting on CI, round ${i + 1}`, { retryAfter: '10ms' })),
    say('completing', 'green', { result: 'ok' }),
  ];
  const model = scenario('busy', turns);
  const plan = compile(
    `name: team-signals\nteam: {}\nsteps:\n  - id: w\n    forEach: "{{ inputs.items }}"\n    as: n\n    concurrency: 10\n    agent: { prompt: "work on {{ n }}", model: "${model}", maxTurns: 60 }\ninputs:\n  items: { type: json }\n`,
    ws,
  );
  await withWorker(async (h) => {
    const id = await startPlan(h, plan, { items: Array.from({ length: 10 }, (_, i) => i) });
    const d = await waitUntil(h, id, (x) => x.status !== 'running', 180_000);
    expect(d.status).toBe('completed');
    const moves: WorkerState[] = ['running', ...Array.from({ length: CYCLES }, () => ['blocked', 'running'] as WorkerState[]).flat(), 'completing', 'completed'];
    const workers = d.workers ?? [];
    expect(workers).toHaveLength(10);
    const applied = workers.reduce((sum, w) => sum + w.seq, 0);
    expect(applied).toBe(10 * moves.length); // 1,030 signals
    for (const w of workers) expect(w).toMatchObject({ state: 'completed', seq: moves.length, fingerprint: expectedFingerprint(moves) });
  }, {});
}, 240_000);

async function listIds(h: Harness, query: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const run of h.client.client.workflow.list({ query })) ids.push(run.workflowId);
  return ids;
}

async function expectEventually(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 200));
  }
}
