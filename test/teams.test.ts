/**
 * Team workers on the dev server: agents that say their state with `signal_state`, a team run that
 * applies every state signal once and in order, the `CadreWorkerState` search attribute, and a
 * worker that goes quiet being marked blocked instead of done. Models are scripted (offline).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import type { AgentDiagnostics } from '../src/protocol/definitions';
import { agentDiagnosticsQuery } from '../src/protocol/definitions';
import { WorkerStateMachine, type WorkerState } from '../src/protocol/worker-state';
import { findTemporalCli } from '../src/worker/temporal-cli';
import { modelSettings } from '../src/providers/config';
import { runCadre, testServerEnv } from './support/cli';
import { patchMarkers } from './support/history';
import { tempRepository } from './support/git-repo';
import { type Harness, compile, fileWorker, startPlan, step, tempWorkspace, waitUntil, withWorker } from './support/harness';

// One worker for the file's runs that need nothing of their own in it (harness.ts, fileWorker); the one with its own model settings makes its own.
const withFileWorker = fileWorker('tq-teams');

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
  await withFileWorker(async (h) => {
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
    // One patch marker each, their baselines' (protocol/patches.ts): each marker brings an upsert of TemporalChangeVersion.
    expect(await patchMarkers(h.client.client, id)).toEqual(['plan-baseline-4']);
    expect(await patchMarkers(h.client.client, agentId)).toEqual(['agent-baseline']);
  });
});

test("a worker's completing waits for its step's verify: a failing check sends it back to running with the output, and it completes once the check passes", async () => {
  const ws = tempWorkspace();
  const model = scenario('verified', [
    say('completing', 'done', { result: 'first' }),
    { expect: { lastRole: 'user', lastContains: 'no done.txt yet' }, reply: { toolCalls: [{ name: 'fs_write', args: { path: 'done.txt', content: 'ok' } }] } },
    say('completing', 'wrote done.txt', { result: 'second' }),
  ]);
  const agent = `{ role: architect, prompt: write done.txt, model: "${model}", tools: [fs.write], verify: "test -f done.txt || { echo no done.txt yet; exit 1; }" }`;
  const plan = compile(`name: team-verify\nteam: {}\noutput: "{{ steps.architect.output }}"\nsteps:\n  - { id: architect, agent: ${agent} }\n`, ws);
  await withFileWorker(async (h) => {
    const id = await startPlan(h, plan);
    const d = await waitUntil(h, id, (x) => x.status !== 'running');
    expect(d.status).toBe('completed');
    expect(d.output).toBe('second');
    const agentId = step(d, 'architect').agent?.workflowId as string;
    const a: AgentDiagnostics = await h.client.client.workflow.getHandle(agentId).query(agentDiagnosticsQuery);
    expect(a.transitions.map((t) => `${t.from}>${t.to}: ${t.reason}`)).toEqual([
      'initializing>running: started',
      'running>completing: done',
      'completing>running: its verify check failed',
      'running>completing: wrote done.txt',
      'completing>completed: done',
    ]);
    expect(d.workers).toEqual([expect.objectContaining({ workflowId: agentId, state: 'completed', fingerprint: a.fingerprint })]);
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
  await withFileWorker(async (h) => {
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

// bench/team-signals sends more (540 from 20 workers in CI) and checks the same; here, ten workers at once suffice to interleave.
test('330 state signals from 10 workers reach the team run: none lost, none applied out of order', async () => {
  const ws = tempWorkspace();
  const CYCLES = 15;
  const turns = [
    ...Array.from({ length: CYCLES }, (_, i) => say('blocked', `waiting on CI, round ${i + 1}`, { retryAfter: '10ms' })),
    say('completing', 'green', { result: 'ok' }),
  ];
  const model = scenario('busy', turns);
  const plan = compile(
    `name: team-signals\nteam: {}\nsteps:\n  - id: w\n    forEach: "{{ inputs.items }}"\n    as: n\n    concurrency: 10\n    agent: { prompt: "work on {{ n }}", model: "${model}", maxTurns: 60 }\ninputs:\n  items: { type: json }\n`,
    ws,
  );
  await withFileWorker(async (h) => {
    const id = await startPlan(h, plan, { items: Array.from({ length: 10 }, (_, i) => i) });
    const d = await waitUntil(h, id, (x) => x.status !== 'running', 180_000);
    expect(d.status).toBe('completed');
    const moves: WorkerState[] = ['running', ...Array.from({ length: CYCLES }, () => ['blocked', 'running'] as WorkerState[]).flat(), 'completing', 'completed'];
    const workers = d.workers ?? [];
    expect(workers).toHaveLength(10);
    const applied = workers.reduce((sum, w) => sum + w.seq, 0);
    expect(applied).toBe(10 * moves.length); // 330 signals
    for (const w of workers) expect(w).toMatchObject({ state: 'completed', seq: moves.length, fingerprint: expectedFingerprint(moves) });
  });
}, 240_000);

const ask = (question: string, canBeAnsweredBy?: string) => ({ reply: { toolCalls: [{ name: 'ask_question', args: { question, ...(canBeAnsweredBy && { canBeAnsweredBy }) } }] } });
const QUESTION = 'Which module should hold the retry logic?';

/** A team plan: one implementer step on `model`, specialists and subtasks on `teamModel`. */
function teamPlan(name: string, model: string, teamModel: string, ws: string, extra = ''): ReturnType<typeof compile> {
  return compile(`name: ${name}
team: { model: "${teamModel}"${extra} }
steps:
  - { id: impl, agent: { role: implementer, prompt: add retries, model: "${model}" } }
`, ws);
}

/** Runs to the end, answering nothing; returns every run status seen on the way. */
async function statusesUntilDone(h: Harness, id: string): Promise<string[]> {
  const seen = new Set<string>();
  await waitUntil(h, id, (d) => (seen.add(d.status), !['running', 'waiting'].includes(d.status)));
  return [...seen];
}

test('a team forked at a later worker: the finished worker is restored on the board, not run again; the answers the team remembered answer the worker that runs again', async () => {
  const ws = tempWorkspace();
  const designer = scenario('fork-designer', [say('completing', 'designed', { result: 'a retry wrapper' })]);
  const asker = scenario('fork-asker', [ask(QUESTION, 'architect'), { expect: { lastContains: 'The architect answered (confidence 0.9)' }, ...say('completing', 'built', { result: 'v1' }) }]);
  const architect = scenario('fork-architect', [{ expect: { lastContains: QUESTION }, ...say('completing', 'answered', { result: { answer: 'src/http/retry.ts', confidence: 0.9 } }) }]);
  const teamFork = (impl: string) =>
    `name: team-fork\nteam: { model: "${architect}" }\nsteps:\n  - { id: design, agent: { role: architect, prompt: design it, model: "${designer}" } }\n  - { id: impl, dependsOn: [design], agent: { role: implementer, prompt: "build {{ steps.design.output }}", model: "${impl}" } }\n`;
  await withFileWorker(async (h) => {
    const old = await startPlan(h, compile(teamFork(asker), ws));
    expect((await h.client.result(old)).consultations?.map((c) => c.outcome)).toEqual(['answered']);
    // The implementer again, on a model that asks the same question and expects the remembered answer.
    const again = scenario('fork-asker-again', [ask(QUESTION, 'architect'), { expect: { lastContains: 'the answer given earlier to the same question' }, ...say('completing', 'built', { result: 'v2' }) }]);
    writeFileSync(path.join(ws, 'again.yaml'), teamFork(again));
    const env = { ...testServerEnv(), CADRE_TASK_QUEUE: h.taskQueue };
    const forked = await runCadre(['fork', old, '--from', 'impl', '--plan', 'again.yaml', '--json', '--task-queue', h.taskQueue], ws, env);
    expect(forked).toMatchObject({ code: 0 });
    const { workflowId } = JSON.parse(forked.stdout) as { workflowId: string };
    const d = await h.client.result(workflowId);
    expect(d.status).toBe('completed');
    expect(step(d, 'design')).toMatchObject({ note: `restored from ${old}`, agent: { workflowId: expect.stringMatching(new RegExp(`^${old}/`)) } });
    expect(d.workers?.map((w) => [w.step, w.state, w.reason, w.workflowId.startsWith(`${workflowId}/`)])).toEqual([
      ['design', 'completed', `restored from ${old}`, false],
      ['impl', 'completed', 'done', true],
    ]);
    // No specialist was asked in the fork: the answer came from what the team remembered.
    expect(d.consultations?.map((c) => c.outcome)).toEqual(['cached']);
  });
});

describe('questions', () => {
  test('a specialist sure of its answer answers; the same question again comes from memory; no person is asked', async () => {
    const ws = tempWorkspace();
    const model = scenario('asker', [
      ask(QUESTION, 'architect'),
      { expect: { lastContains: 'The architect answered (confidence 0.9): src/http/retry.ts' }, ...ask(`  which module should hold the retry logic `) },
      { expect: { lastContains: 'the answer given earlier to the same question' }, ...say('completing', 'done', { result: 'retries in src/http/retry.ts' }) },
    ]);
    const architect = scenario('sure-architect', [
      { expect: { lastContains: QUESTION }, ...say('completing', 'answered', { result: { answer: 'src/http/retry.ts', confidence: 0.9 } }) },
    ]);
    await withFileWorker(async (h) => {
      const id = await startPlan(h, teamPlan('team-consult', model, architect, ws));
      const statuses = await statusesUntilDone(h, id);
      const d = await h.client.result(id);
      expect(d.status).toBe('completed');
      expect(statuses).not.toContain('waiting');
      expect(d.consultations?.map((c) => [c.from, c.to, c.outcome, c.confidence])).toEqual([
        ['impl', 'architect', 'answered', 0.9],
        ['impl', undefined, 'cached', undefined],
      ]);
      expect(d.workers?.map((w) => [w.step, w.role, w.state])).toEqual([
        ['impl', 'implementer', 'completed'],
        ['consult-1', 'architect', 'completed'],
      ]);
      const a: AgentDiagnostics = await h.client.client.workflow.getHandle(step(d, 'impl').agent?.workflowId as string).query(agentDiagnosticsQuery);
      expect(a.transitions.map((t) => t.to)).toEqual(['running', 'waiting_for_input', 'running', 'waiting_for_input', 'running', 'completing', 'completed']);
      expect(a.waiting).toEqual([]);
    });
  });

  test('an unsure specialist sends the question to a person, whose answer resumes the worker and is remembered', async () => {
    const ws = tempWorkspace();
    const model = scenario('asker-2', [
      ask(QUESTION),
      { expect: { lastContains: 'A person answered: put it in src/net' }, ...ask(QUESTION) },
      { expect: { lastContains: 'A person answered (the answer given earlier to the same question): put it in src/net' }, ...say('completing', 'done', { result: 'ok' }) },
    ]);
    const unsure = scenario('unsure-architect', [say('completing', 'guess', { result: { answer: 'maybe src/util', confidence: 0.3 } })]);
    await withFileWorker(async (h) => {
      const id = await startPlan(h, teamPlan('team-escalate', model, unsure, ws));
      const d = await waitUntil(h, id, (x) => x.waiting.length > 0);
      expect(d.status).toBe('waiting');
      expect(d.waiting[0]).toMatchObject({ kind: 'ask', prompt: expect.stringContaining(`impl asks: ${QUESTION}`) });
      expect(d.waiting[0].prompt).toContain('was not sure (confidence 0.3): maybe src/util');
      expect(d.workers?.find((w) => w.step === 'impl')?.state).toBe('waiting_for_input');
      await h.client.answer(id, d.waiting[0].id, 'put it in src/net');
      const done = await h.client.result(id);
      expect(done.status).toBe('completed');
      expect(done.consultations?.map((c) => [c.to, c.outcome, c.confidence])).toEqual([
        ['architect', 'escalated', 0.3],
        [undefined, 'cached', undefined],
      ]);
    });
  });

  test('a consultation loop (implementer asks architect asks implementer) is cut with a note', async () => {
    const ws = tempWorkspace();
    const model = scenario('asker-3', [ask(QUESTION, 'architect'), { expect: { lastContains: 'The architect answered' }, ...say('completing', 'done', { result: 'ok' }) }]);
    const looping = scenario('looping-architect', [
      ask('How is the HTTP client used today?', 'implementer'),
      { expect: { lastContains: 'consultation loop cut: implementer → architect → implementer' }, ...say('completing', 'decided', { result: { answer: 'src/http/retry.ts', confidence: 0.8 } }) },
    ]);
    await withFileWorker(async (h) => {
      const id = await startPlan(h, teamPlan('team-loop', model, looping, ws));
      const statuses = await statusesUntilDone(h, id);
      const d = await h.client.result(id);
      expect(d.status).toBe('completed');
      expect(statuses).not.toContain('waiting');
      const [first, second] = d.consultations ?? [];
      expect(second).toMatchObject({ from: 'consult-1', to: 'implementer', outcome: 'cut' });
      expect(second.note).toContain('would ask the implementer again');
      expect(first).toMatchObject({ from: 'impl', to: 'architect', outcome: 'answered' });
    });
  });
});

describe('subtasks', () => {
  test('a worker waits for its subtask and goes on with the result; bounds are said back to the model', async () => {
    const ws = tempWorkspace();
    const spawn = (role: string) => ({ reply: { toolCalls: [{ name: 'spawn_subtask', args: { role, prompt: 'write tests for retries' } }] } });
    const model = scenario('parent', [
      spawn('tester'),
      { expect: { lastContains: '3 tests added' }, ...spawn('tester') },
      { expect: { lastContains: 'at most 1 subtasks' }, ...say('completing', 'done', { result: 'ok' }) },
    ]);
    const tester = scenario('tester', [say('completing', 'tests written', { result: '3 tests added' })]);
    await withFileWorker(async (h) => {
      const d = await h.client.result(await startPlan(h, teamPlan('team-subtask', model, tester, ws, ', maxSubtasks: 1')));
      expect(d.status).toBe('completed');
      expect(d.workers?.map((w) => [w.step, w.role, w.state])).toEqual([
        ['impl', 'implementer', 'completed'],
        ['impl/sub-1', 'tester', 'completed'],
      ]);
      const a: AgentDiagnostics = await h.client.client.workflow.getHandle(step(d, 'impl').agent?.workflowId as string).query(agentDiagnosticsQuery);
      expect(a.transitions.map((t) => t.to)).toEqual(['running', 'waiting_for_subtask', 'running', 'completing', 'completed']);
    });
  });

  test('cancelling the team run with the temporal CLI cancels every worker and subtask, releases the worktrees and keeps their uncommitted work', async () => {
    const cli = await findTemporalCli({ build: false });
    if (!cli) throw new Error('the temporal CLI is needed for this test (run .ci/run once to build it)');
    const { home, repo } = tempRepository('cadre-team-cancel-');
    const ws = path.join(home, 'ws');
    mkdirSync(ws);
    const model = scenario('writer-parent', [
      { reply: { toolCalls: [{ name: 'fs_write', args: { path: 'draft.txt', content: 'not committed' } }] } },
      { reply: { toolCalls: [{ name: 'spawn_subtask', args: { role: 'implementer', prompt: 'fix the tests', worktree: true } }] } },
    ]);
    const stuck = scenario('stuck-subtask', [
      { reply: { toolCalls: [{ name: 'fs_write', args: { path: 'notes.txt', content: 'half done' } }] } },
      say('blocked', 'waiting for access to the wiki'),
    ]);
    const plan = compile(
      `name: team-cancel\nteam: { model: "${stuck}" }\nsteps:\n  - { id: impl, worktree: { repo: ${repo}, task: impl, cleanup: always }, agent: { role: implementer, prompt: go, model: "${model}", tools: [fs.write] } }\n`,
      ws,
    );
    await withFileWorker(async (h) => {
      const id = await startPlan(h, plan);
      const d = await waitUntil(h, id, (x) => x.workers?.some((w) => w.step === 'impl/sub-1' && w.state === 'blocked') ?? false);
      const ids = (d.workers ?? []).map((w) => w.workflowId);
      expect(ids).toHaveLength(2);
      const sub = d.workers?.find((w) => w.step === 'impl/sub-1');
      // The subtask works in a worktree of its own, branched from its parent's.
      const parentPath = d.worktrees?.[0].path as string;
      const subDiag: AgentDiagnostics = await h.client.client.workflow.getHandle(sub?.workflowId as string).query(agentDiagnosticsQuery);
      expect(subDiag.state).toBe('blocked');
      await promisify(execFile)(cli, ['workflow', 'cancel', '--address', process.env.CADRE_TEST_ADDRESS as string, '--workflow-id', id]);
      const done = await waitUntil(h, id, (x) => x.status === 'cancelled');
      for (const workflowId of ids) {
        const description = await h.client.client.workflow.getHandle(workflowId).describe();
        expect([workflowId, description.status.name]).toEqual([workflowId, 'CANCELLED']);
        expect(description.searchAttributes.CadreWorkerState).toEqual(['cancelled']);
      }
      const [worktree] = done.worktrees ?? [];
      expect(worktree).toMatchObject({ state: 'kept', files: ['draft.txt'] });
      expect(existsSync(path.join(parentPath, 'draft.txt'))).toBe(true);
      const parent: AgentDiagnostics = await h.client.client.workflow.getHandle(step(done, 'impl').agent?.workflowId as string).query(agentDiagnosticsQuery);
      const [subWorktree] = parent.worktrees ?? [];
      expect(subWorktree).toMatchObject({ state: 'kept', files: ['notes.txt'], branch: expect.stringContaining('sub-1') });
      expect(subWorktree.path).not.toBe(parentPath);
      expect(existsSync(path.join(subWorktree.path as string, 'notes.txt'))).toBe(true);
      expect(existsSync(path.join(subWorktree.path as string, 'draft.txt'))).toBe(false);
    });
  });
});

describe('cadre team', () => {
  test('a goal gets a lead with the role that fits it; a plan file runs as a team', async () => {
    const ws = tempWorkspace();
    const model = scenario('lead', [{ expect: { lastContains: 'Write unit tests for the parser' }, ...say('completing', 'tests written', { result: 'parser tests: 4 added' }) }]);
    writeFileSync(path.join(ws, 'plan.yaml'), 'name: plain\nsteps:\n  - { id: a, agent: { prompt: "Write unit tests for the parser" } }\noutput: "{{ steps.a.output }}"\n');
    await withWorker(
      async (h) => {
        const goal = await runCadre(['team', 'Write unit tests for the parser edge cases', '--wait', '--task-queue', h.taskQueue], ws, testServerEnv());
        expect(goal.stderr).toContain('lead: tester (matched: ');
        expect(goal.stdout).toContain('◆ lead             completed            role tester');
        expect(goal.stdout).toContain('"parser tests: 4 added"');
        expect(goal.code).toBe(0);
        // The plan names no team, yet runs as one: its agent finishes with signal_state.
        const file = await runCadre(['team', 'plan.yaml', '--wait', '--json', '--task-queue', h.taskQueue], ws, testServerEnv());
        expect(file.code).toBe(0);
        expect(JSON.parse(file.stdout)).toMatchObject({ status: 'completed', output: 'parser tests: 4 added', workers: [expect.objectContaining({ step: 'a', state: 'completed' })] });
      },
      { activityDeps: { models: modelSettings({}, { CADRE_MODEL: model }) } },
    );
  });
});

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
