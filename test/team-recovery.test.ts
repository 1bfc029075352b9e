/**
 * A team worker recovers from a failure by its class, one test per class, on the dev server with
 * real HTTP to a fake OpenAI server (and a real git worktree): attempt counts and final states.
 */
import { mkdirSync, mkdtempSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { modelSettings } from '../src/providers/config';
import { auditFile } from '../src/store/audit-files';
import { STALE_LOCK_MS } from '../src/git/repair';
import type { CustomToolsConfig } from '../src/activities/tools/custom/config';
import { TSX } from './support/tsx';
import { type FakeModelServer, startFakeModelServer } from './support/fake-model-server';
import { git, tempRepository } from './support/git-repo';
import { type Harness, compile, startPlan, step, tempWorkspace, waitUntil, withWorker } from './support/harness';

const KEY = 'sk-test-recovery-41b2';
let server: FakeModelServer;
let auditDir: string;

beforeAll(async () => {
  server = await startFakeModelServer();
});
afterAll(() => server.close());
beforeEach(() => {
  server.requests.splice(0);
  auditDir = mkdtempSync(path.join(os.tmpdir(), 'cadre-audit-'));
});

function withModels<T>(fn: (h: Harness) => Promise<T>, customTools?: CustomToolsConfig): Promise<T> {
  return withWorker(fn, { activityDeps: { models: modelSettings({}, { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: server.baseURL }), ...(customTools && { customTools }) }, auditDir });
}

const finish = (id: string) => ({ toolCalls: [{ id, name: 'signal_state', args: { state: 'completing', reason: 'done', result: 'ok' } }] });
const modelsAsked = () => server.requests.map((r) => r.body.model);

function plan(ws: string, team: string, agent = ''): ReturnType<typeof compile> {
  return compile(`name: recovery\nteam: { ${team} }\nsteps:\n  - { id: w, agent: { prompt: go, model: "openai:gpt-main"${agent} } }\n`, ws);
}

function recoveries(workflowId: string): unknown[] {
  const lines = readFileSync(auditFile(auditDir, workflowId), 'utf8').trim().split('\n');
  return lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((e) => e.event === 'worker.recovery').map((e) => [e.errorClass, e.errorType, e.recovery]);
}

/** Each activity of a workflow as [type, attempts of its last try, outcome]. */
async function activities(h: Harness, workflowId: string): Promise<[string, number, string][]> {
  const history = await h.client.client.workflow.getHandle(workflowId).fetchHistory();
  const E = temporal.api.enums.v1.EventType;
  const rows = new Map<number, [string, number, string]>();
  for (const e of history.events ?? []) {
    if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) rows.set(Number(e.eventId), [e.activityTaskScheduledEventAttributes?.activityType?.name ?? '', 0, 'scheduled']);
    const started = e.activityTaskStartedEventAttributes;
    if (started) (rows.get(Number(started.scheduledEventId)) as [string, number, string])[1] = started.attempt ?? 0;
    const ended = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes;
    if (ended) (rows.get(Number(ended.scheduledEventId)) as [string, number, string])[2] = e.activityTaskCompletedEventAttributes ? 'completed' : 'failed';
  }
  return [...rows.values()];
}

test('transient: rate limits are retried with backoff, then the fallback model takes over', async () => {
  const ws = tempWorkspace();
  server.enqueue({ status: 429 }, { status: 429 }, { status: 429 }, finish('c1'));
  await withModels(async (h) => {
    const id = await startPlan(h, plan(ws, 'fallbackModel: "openai:gpt-fallback"'));
    const d = await h.client.result(id);
    expect(d.status).toBe('completed');
    expect(modelsAsked()).toEqual(['gpt-main', 'gpt-main', 'gpt-main', 'gpt-fallback']);
    // Backoff with jitter between the three tries: each wait at least half of 1 s, then 2 s.
    const at = server.requests.map((r) => r.at);
    expect(at[1] - at[0]).toBeGreaterThanOrEqual(450);
    expect(at[2] - at[1]).toBeGreaterThanOrEqual(950);
    const agentId = step(d, 'w').agent?.workflowId as string;
    expect((await activities(h, agentId)).filter(([type]) => type === 'modelTurnChained')).toEqual([
      ['modelTurnChained', 3, 'failed'],
      ['modelTurnChained', 1, 'completed'],
    ]);
    expect(recoveries(id)).toEqual([['transient', 'ModelRateLimited', 'fallback_model']]);
    expect(d.workers?.[0].state).toBe('completed');
  });
});

test('transient without a fallback model: another round of retries with backoff', async () => {
  const ws = tempWorkspace();
  server.enqueue({ status: 503 }, { status: 503 }, { status: 503 }, { status: 503 }, finish('c1'));
  await withModels(async (h) => {
    const id = await startPlan(h, plan(ws, ''));
    const d = await h.client.result(id);
    expect(d.status).toBe('completed');
    expect(modelsAsked()).toEqual(['gpt-main', 'gpt-main', 'gpt-main', 'gpt-main', 'gpt-main']);
    const agentId = step(d, 'w').agent?.workflowId as string;
    expect((await activities(h, agentId)).filter(([type]) => type === 'modelTurnChained')).toEqual([
      ['modelTurnChained', 3, 'failed'],
      ['modelTurnChained', 2, 'completed'],
    ]);
    expect(recoveries(id)).toEqual([['transient', 'ModelUnavailable', 'retried']]);
  });
});

test('infrastructure: a stale git lock is removed from the worktree and the tool call runs again', async () => {
  const { home, repo } = tempRepository('cadre-recovery-');
  const ws = path.join(home, 'ws');
  mkdirSync(ws);
  server.enqueue(
    { toolCalls: [{ id: 'c1', name: 'fs_write', args: { path: 'fix.txt', content: 'fixed' } }] },
    { toolCalls: [{ id: 'c2', name: 'git_commit', args: { message: 'fix', all: true } }] },
    finish('c3'),
  );
  await withModels(async (h) => {
    const id = await startPlan(
      h,
      compile(`name: recovery-git\nteam: {}\nsteps:\n  - { id: w, worktree: { repo: ${repo}, task: fix }, agent: { prompt: go, model: "openai:gpt-main", tools: [fs.write, git.commit], approvals: { git.commit: ask } } }\n`, ws),
    );
    // While the commit waits for approval, a git process dies holding the worktree's index lock.
    const d0 = await waitUntil(h, id, (x) => x.waiting.length > 0);
    const worktree = d0.worktrees?.[0].path as string;
    const lock = path.join(git(worktree, 'rev-parse', '--absolute-git-dir'), 'index.lock');
    writeFileSync(lock, '');
    const old = (Date.now() - 2 * STALE_LOCK_MS) / 1000;
    utimesSync(lock, old, old);
    await h.client.answer(id, d0.waiting[0].id, 'approve');
    const d = await h.client.result(id);
    expect(d.status).toBe('completed');
    const agentId = step(d, 'w').agent?.workflowId as string;
    expect((await activities(h, agentId)).filter(([type]) => type === 'runTool')).toEqual([
      ['runTool', 1, 'completed'],
      ['runTool', 3, 'failed'],
      ['runTool', 1, 'completed'],
    ]);
    expect(recoveries(id)).toEqual([['infrastructure', 'GitBusy', 'repaired_worktree']]);
    expect(git(repo, 'log', '--format=%s', '-1', 'cadre/recovery-git/fix')).toBe('fix');
  });
});

test('infrastructure: an MCP server that dies mid-call is started afresh and the call runs again', async () => {
  const ws = tempWorkspace();
  const notes = path.join(ws, 'notes.txt');
  const fixtures = path.join(__dirname, 'fixtures', 'tools');
  const customTools = {
    modules: [],
    mcpServers: {
      notes: {
        command: process.execPath,
        args: ['--import', TSX, path.join(fixtures, 'notes-mcp-server.ts')],
        env: { NOTES_FILE: notes, NOTES_CRASHES: '3' },
        // In the sandbox: it reads its code from this repository and writes only its notes.
        sandbox: { read: [path.resolve(__dirname, '..')], write: [ws] },
      },
    },
    baseDir: fixtures,
  };
  server.enqueue({ toolCalls: [{ id: 'c1', name: 'notes__add_note', args: { text: 'kept' } }] }, finish('c2'));
  await withModels(async (h) => {
    const id = await startPlan(h, plan(ws, '', ', tools: ["mcp:notes/add_note"]'));
    const d = await h.client.result(id);
    expect(d.status).toBe('completed');
    const agentId = step(d, 'w').agent?.workflowId as string;
    // Three attempts met a dying server (each started it again); the recovery's round found it well.
    expect((await activities(h, agentId)).filter(([type]) => type === 'runTool')).toEqual([
      ['runTool', 3, 'failed'],
      ['runTool', 1, 'completed'],
    ]);
    expect(recoveries(id)).toEqual([['infrastructure', 'McpServerUnavailable', 'restarted_server']]);
    expect(readFileSync(notes, 'utf8')).toBe('kept\n');
    expect(readFileSync(`${notes}.crashes`, 'utf8').split('\n').filter(Boolean)).toHaveLength(3);
  }, customTools);
});

test('user_resolvable: a refused key blocks the worker with suggested actions until a person says retry', async () => {
  const ws = tempWorkspace();
  server.enqueue({ status: 401, body: { error: { message: 'Incorrect API key provided' } } });
  await withModels(async (h) => {
    const id = await startPlan(h, plan(ws, ''));
    const d = await waitUntil(h, id, (x) => x.waiting.length > 0);
    expect(d.workers?.[0]).toMatchObject({ state: 'blocked' });
    expect(d.waiting[0]).toMatchObject({ choices: ['retry', 'abort'] });
    expect(d.waiting[0].prompt).toContain('set OPENAI_API_KEY to a valid key');
    expect(d.waiting[0].prompt).toContain('Suggested: set a valid key or token');
    server.enqueue(finish('c1'));
    await h.client.answer(id, d.waiting[0].id, 'retry');
    const done = await h.client.result(id);
    expect(done.status).toBe('completed');
    expect(server.requests).toHaveLength(2);
    expect(recoveries(id)).toEqual([['user_resolvable', 'ModelAuthFailed', 'asked_a_person']]);
    expect(done.workers?.[0].state).toBe('completed');
  });
});

test('permanent: a context that is too long fails the worker at once, with the explanation', async () => {
  const ws = tempWorkspace();
  server.enqueue({ status: 400, body: { error: { message: "This model's maximum context length is 128000 tokens.", code: 'context_length_exceeded' } } });
  await withModels(async (h) => {
    const id = await startPlan(h, plan(ws, ''));
    const d = await waitUntil(h, id, (x) => x.status === 'failed');
    expect(server.requests).toHaveLength(1);
    expect(step(d, 'w')).toMatchObject({ status: 'failed', error: expect.stringContaining("exceeds the model's context window") });
    expect(d.workers?.[0]).toMatchObject({ state: 'error' });
    expect(recoveries(id)).toEqual([['permanent', 'ModelContextTooLong', 'none']]);
  });
});
