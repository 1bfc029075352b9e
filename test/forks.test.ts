/**
 * Forks (docs/forks.md) on the dev server: an ended run run again from one step, the steps that do
 * not depend on it restored from its records (not executed, not paid), what-ifs with --set, and
 * forks that cannot be, refused with the reason.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { Worker } from '@temporalio/worker';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { modelSettings } from '../src/providers/config';
import { auditSinks } from '../src/worker/audit-log';
import { type FakeModelServer, startFakeModelServer } from './support/fake-model-server';
import { runCadre, testServerEnv } from './support/cli';
import { type Harness, compile, sharedWorker, startPlan, step, tempWorkspace, uniqueId, waitUntil } from './support/harness';
import { endSession, sendMessage, sessionDiagnostics } from '../src/client/sessions';
import { CLI_POLL_MS, until } from './support/until';
import { findTemporalCli } from '../src/worker/temporal-cli';
import { git, tempRepository } from './support/git-repo';

const run = promisify(execFile);

let server: FakeModelServer;
/** One worker and one original run for the whole file: each test forks the same run. */
let h: Harness;
let stop: () => Promise<void>;
let ws: string;
let original: string;

beforeAll(async () => {
  server = await startFakeModelServer();
  const models = modelSettings({}, { OPENAI_API_KEY: 'sk-test-forks', OPENAI_BASE_URL: server.baseURL });
  ({ h, stop } = await sharedWorker('tq-forks', { activityDeps: { models } }));
  ws = tempWorkspace();
  repo = tempRepository('cadre-forks-').repo;
  PLAN = planIn(repo);
  original = await ranOnce();
}, 120_000);
afterAll(async () => {
  await stop?.();
  await server?.close();
});
beforeEach(() => server.reset());

/**
 * Seven steps: a shell step that counts its runs in counter.txt, a forEach of 5, an agent, a step
 * that leaves uncommitted work in a worktree, a question, a decision, and a last step, in the same
 * worktree, that needs that work and writes what it read of the others.
 */
const planIn = (repo: string) => `
name: forkable
inputs: { topic: { type: string, default: cats } }
steps:
  - { id: count, tool: shell, with: { command: "n=$(cat counter.txt 2>/dev/null || echo 0); echo $((n+1)) > counter.txt" } }
  - { id: items, forEach: [1, 2, 3, 4, 5], tool: shell, with: { command: "echo item-{{ item }} >> items.txt" } }
  - { id: draft, dependsOn: [count], agent: { prompt: "One line about {{ inputs.topic }}", model: "openai:gpt-4o-mini" } }
  - { id: patch, worktree: { repo: ${repo}, task: fix, cleanup: never }, tool: shell, with: { command: "echo patched >> app.txt && echo new > notes.txt" } }
  - { id: approve, ask: { question: "Ship it?", choices: [yes, no] } }
  - { id: decide, dependsOn: [draft], decide: { prompt: "Is this short? {{ steps.draft.output }}", choices: [short, long], model: "openai:gpt-4o-mini" } }
  - { id: final, dependsOn: [decide, approve, items, patch], worktree: { repo: ${repo}, task: fix, cleanup: never }, tool: shell, with: { command: "grep -q patched app.txt && test -f notes.txt && echo '{{ steps.draft.output }} | {{ steps.decide.output }} | {{ steps.approve.output }}' > final.txt" } }
`;
let repo: string;
let PLAN: string;

/** What a run's last step wrote, in its worktree (a fork's is its own). */
async function finalOf(run: string): Promise<string> {
  const [worktree] = (await h.client.diagnostics(run)).worktrees ?? [];
  return readFileSync(path.join(worktree?.path ?? '(no worktree)', 'final.txt'), 'utf8');
}

async function ranOnce(): Promise<string> {
  server.enqueue({ text: 'cats purr', usage: { inputTokens: 1000, outputTokens: 50, cachedInputTokens: 400 } }, { text: 'short', usage: { inputTokens: 300, outputTokens: 5 } });
  const id = await startPlan(h, compile(PLAN, ws));
  await waitUntil(h, id, (d) => d.waiting.some((w) => w.id === 'approve'));
  await h.client.answer(id, 'approve', 'yes');
  expect((await h.client.result(id)).status).toBe('completed');
  expect(await finalOf(id)).toBe('cats purr | short | yes\n');
  server.requests.splice(0);
  return id;
}

describe('cadre fork', () => {
  test('forked at the decision with the agent\'s output set: nothing before it runs or is paid again, the question is not asked again, and the last step sees the new output', async () => {
    server.enqueue({ text: 'long', usage: { inputTokens: 300, outputTokens: 10 } });
    const env = { ...testServerEnv(), CADRE_TASK_QUEUE: h.taskQueue };
    const forkId = uniqueId('fork');
    const forked = await runCadre(['fork', original, '--from', 'decide', '--set', 'draft="dogs bark"', '--id', forkId, '--task-queue', h.taskQueue, '--wait'], ws, env);
    expect(forked).toMatchObject({ code: 0 });
    const d = await h.client.diagnostics(forkId);
    expect(d).toMatchObject({ status: 'completed', forkedFrom: { run: original, step: 'decide' }, waiting: [] });
    // The counter and the forEach's file are as the original left them: their steps were restored, not run.
    expect(readFileSync(path.join(ws, 'counter.txt'), 'utf8')).toBe('1\n');
    expect(readFileSync(path.join(ws, 'items.txt'), 'utf8').trim().split('\n')).toHaveLength(5);
    // One model request: the decision's. The agent was restored, its output set by the fork.
    expect(server.requests).toHaveLength(1);
    expect(JSON.stringify(server.requests[0].body.messages)).toContain('Is this short? dogs bark');
    // The last step ran in a worktree of the fork's own, made from where the restored step left its
    // files (uncommitted), on a branch of its own; the old run's worktree is as it left it.
    expect(await finalOf(forkId)).toBe('dogs bark | long | yes\n');
    expect(await finalOf(original)).toBe('cats purr | short | yes\n');
    const [worktree] = d.worktrees ?? [];
    expect(worktree).toMatchObject({ task: 'fix', branch: `cadre/forkable/fix@${forkId}`, state: 'kept' });
    expect(git(worktree.path as string, 'status', '--porcelain').split('\n').map((l) => l.trim()).sort()).toEqual(['?? final.txt', '?? notes.txt', 'M app.txt']);
    expect(step(d, 'patch').worktree).toEqual(step(await h.client.diagnostics(original), 'patch').worktree);
    expect(d.steps.map((s) => [s.id, s.status, s.note])).toEqual([
      ['count', 'completed', `restored from ${original}`],
      ['items', 'completed', `restored from ${original}`],
      ['draft', 'completed', `restored from ${original}, its output set by the fork`],
      ['patch', 'completed', `restored from ${original}`],
      ['approve', 'completed', `restored from ${original}`],
      ['decide', 'completed', undefined],
      ['final', 'completed', undefined],
    ]);
    // The restored agent keeps what it used in the original; the original run is unchanged.
    expect(step(d, 'draft').agent).toMatchObject({ turns: 1 });
    expect((await h.client.diagnostics(original)).forkedFrom).toBeUndefined();
    // The Web UI's Current Details say so too.
    const metadata = await h.client.client.workflow.getHandle(forkId).query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toContain(`\`count\` completed (restored from ${original})`);
    const status = await runCadre(['status', forkId], ws, env);
    expect(status.stdout).toContain(`forked from ${original} at step decide`);
    expect(status.stdout).toMatch(new RegExp(`count +completed .*\\(restored from ${original}\\)`));
    // cadre diff lists exactly the steps that changed: the output set, the decision, and the step that ran again after them.
    const diff = await runCadre(['diff', original, forkId, '--json'], ws, env);
    const differ = (JSON.parse(diff.stdout) as { differ: { step: string; output?: unknown }[] }).differ;
    expect(differ.map((d) => d.step)).toEqual(['draft', 'decide', 'final']);
    expect(differ[0]).toEqual({ step: 'draft', output: [{ path: '$', a: 'cats purr', b: 'dogs bark' }] });
    expect(differ[1].output).toEqual([{ path: '$', a: 'short', b: 'long' }]);
    // With a price table, costs: the fork paid for the decision only, the draft's turn was paid by the original.
    writeFileSync(path.join(ws, 'cadre.config.yaml'), 'models:\n  prices:\n    "openai:gpt-4o-mini": { input: 0.15, output: 0.6, cachedInput: 0.075 }\n');
    const text = (await runCadre(['diff', original, forkId], ws, env)).stdout;
    expect(text).toMatch(new RegExp(`^${original} → ${forkId}: 3 of 7 steps differ\n  draft: output \\$: "cats purr" → "dogs bark"\n`));
    expect(text).toContain('tokens 305 → 310; cost $0.000048 → $0.000051');
    expect(text).toContain('\n  spent: 1355 tokens ($0.00020) → 310 tokens ($0.000051)');
    // Lineage: the memo, and the search attribute `cadre list --forks-of` and the temporal CLI query.
    const description = await h.client.client.workflow.getHandle(forkId).describe();
    expect(await description.memo).toMatchObject({ forkedFrom: { run: original, step: 'decide' } });
    // Visibility lags the server a little: asked until it lists the fork.
    const temporal = await findTemporalCli({ build: false });
    if (!temporal) throw new Error('the temporal CLI is needed for this test (run .ci/run once to build it)');
    const lineage = await until('the fork listed as a fork of the original', async () => {
      const listed = JSON.parse((await runCadre(['list', '--forks-of', original, '--json'], ws, env)).stdout) as { workflowId: string }[];
      const query = `CadreForkedFrom="${original}"`;
      const { stdout } = await run(temporal, ['workflow', 'list', '--address', process.env.CADRE_TEST_ADDRESS as string, '--query', query, '--output', 'json']);
      const text = stdout.trim();
      const rows = (text.startsWith('[') ? JSON.parse(text) : text.split('\n').filter(Boolean).map((line) => JSON.parse(line))) as { execution: { workflowId: string } }[];
      const viaTemporal = rows.map((r) => r.execution.workflowId);
      return listed.length > 0 && viaTemporal.length > 0 ? { cadre: listed.map((r) => r.workflowId), temporal: viaTemporal } : undefined;
    }, 15_000, CLI_POLL_MS);
    expect(lineage).toEqual({ cadre: [forkId], temporal: [forkId] });
    // The fork replays from its history.
    const history = await h.client.client.workflow.getHandle(forkId).fetchHistory();
    expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
    await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string }, sinks: auditSinks(tempWorkspace()) }, history, forkId);
    const file = path.join(__dirname, 'histories', 'run-plan-fork-worktree.json');
    if (!existsSync(file)) writeFileSync(file, `${historyToJSON(history)}\n`);
  });

  test('an agent forked at turn 2 goes on from its third turn: turns 1–2 resent from the old run\'s history, not asked of the model, their tools not run again', async () => {
    const dir = tempWorkspace();
    const plan = compile('name: turns\nsteps:\n  - { id: work, agent: { prompt: "Log some lines", model: "openai:gpt-4o-mini", tools: [fs.write] } }\n  - { id: after, dependsOn: [work], tool: fs.read, with: { path: log.txt } }\n', dir);
    const line = (id: string, text: string) => ({ toolCalls: [{ id, name: 'fs_write', args: { path: 'log.txt', content: `${text}\n`, append: true } }] });
    server.enqueue(line('a', 'alpha'), line('b', 'beta'), line('c', 'gamma'), { text: 'logged' });
    const old = await startPlan(h, plan);
    expect((await h.client.result(old)).status).toBe('completed');
    expect(server.requests).toHaveLength(4);
    server.requests.splice(0);
    server.enqueue(line('c', 'delta'), { text: 'logged again' });
    const env = { ...testServerEnv(), CADRE_TASK_QUEUE: h.taskQueue };
    const forkId = uniqueId('fork-turn');
    expect(await runCadre(['fork', old, '--from', 'work', '--turn', '2', '--id', forkId, '--task-queue', h.taskQueue, '--wait'], dir, env)).toMatchObject({ code: 0 });
    // Two requests, for turns 3 and 4; the first carries turns 1–2 as the old agent had them.
    expect(server.requests).toHaveLength(2);
    const conversation = (server.requests[0].body.messages as { role: string }[]).filter((m) => m.role !== 'system');
    expect(conversation.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'tool']);
    expect(JSON.stringify(conversation)).toMatch(/alpha.*beta/);
    expect(JSON.stringify(conversation)).not.toContain('gamma');
    // Turns 1–2's writes happened once, in the old run; the fork wrote only its own third line.
    expect(readFileSync(path.join(dir, 'log.txt'), 'utf8')).toBe('alpha\nbeta\ngamma\ndelta\n');
    const d = await h.client.result(forkId);
    expect(step(d, 'work')).toMatchObject({ note: `ran again from turn 3: its first 2 turns restored from ${old}`, agent: { turns: 4 } });
    // Refused: a turn past the agent's last, and a step that is no agent.
    const refused = async (options: { step: string; turn: number }) => {
      const { workflowId } = await h.client.fork(old, { ...options, taskQueue: h.taskQueue });
      return (await waitUntil(h, workflowId, (x) => x.status === 'failed')).reason;
    };
    expect(await refused({ step: 'work', turn: 4 })).toContain(`fork.turn: step "work" took 4 turns in run ${old}: fork at a turn before its last`);
    expect(await refused({ step: 'after', turn: 1 })).toContain('fork.turn: step "after" is a tool step: only an agent step forks at a turn');
  });

  test('a fork that cannot be fails at once, naming each field: a run still running, a step the plan lacks, an output set on a step that runs again', async () => {
    const refused = async (run: string, options: Parameters<Harness['client']['fork']>[1]) => {
      const { workflowId } = await h.client.fork(run, { ...options, taskQueue: h.taskQueue });
      const d = await waitUntil(h, workflowId, (x) => x.status === 'failed');
      return d.reason ?? '';
    };
    expect(await refused(original, { step: 'nope', set: { final: 'x' } })).toBe('the fork cannot start:\nfork.step: plan "forkable" has no step "nope"');
    const both = await refused(original, { step: 'decide', set: { final: 'x', gone: 1 } });
    expect(both).toContain('fork.set.final: step "final" runs again in the fork (it is "decide" or downstream of it): only a restored step\'s output can be set');
    expect(both).toContain('fork.set.gone: plan "forkable" has no step "gone"');
    // A run still waiting for its question.
    server.enqueue({ text: 'cats purr' }, { text: 'short' });
    const open = await startPlan(h, compile(planIn(tempRepository('cadre-forks-').repo), tempWorkspace()));
    await waitUntil(h, open, (d) => d.waiting.length > 0);
    expect(await refused(open, { step: 'decide' })).toContain(`fork.from: run ${open} is still running: fork it once it ended (or cancel it)`);
    expect(await refused('no-such-run-7f3a', { step: 'decide' })).toContain('fork.from: no run no-such-run-7f3a in this namespace');
    await h.client.cancel(open);
  });

  test('onto an edited plan: a step whose action changed runs again, saying why, with those after it; the unchanged are restored', async () => {
    const edited = path.join(ws, 'edited.yaml');
    writeFileSync(edited, PLAN.replace('>> items.txt', '>> items-2.txt'));
    const forkId = uniqueId('fork-edited');
    const env = { ...testServerEnv(), CADRE_TASK_QUEUE: h.taskQueue };
    expect(await runCadre(['fork', original, '--from', 'final', '--plan', edited, '--id', forkId, '--task-queue', h.taskQueue, '--wait'], ws, env)).toMatchObject({ code: 0 });
    const d = await h.client.diagnostics(forkId);
    expect(d.steps.map((s) => [s.id, s.note])).toEqual([
      ['count', `restored from ${original}`],
      ['items', "ran again: its action changed in the fork's plan"],
      ['draft', `restored from ${original}`],
      ['patch', `restored from ${original}`],
      ['approve', `restored from ${original}`],
      ['decide', `restored from ${original}`],
      ['final', undefined],
    ]);
    expect(readFileSync(path.join(ws, 'items-2.txt'), 'utf8').trim().split('\n')).toHaveLength(5);
    expect(server.requests).toHaveLength(0);
  });

  test('after a fix, a bulk fork takes every failed run of a plan from its failed step: 20 of 20 complete, their first steps restored', async () => {
    const dir = tempWorkspace();
    const name = uniqueId('flaky').replace(/[^a-z0-9-]/g, '-');
    // File tools, no process: twenty runs and twenty forks stay cheap. check fails until `fixed` exists.
    const plan = compile(
      `name: ${name}\ninputs: { n: { type: number } }\nsteps:\n  - { id: prep, tool: fs.write, with: { path: "prep-{{ inputs.n }}.txt", content: "prepared\\n", append: true } }\n  - { id: check, dependsOn: [prep], retry: { maximumAttempts: 1 }, tool: fs.read, with: { path: fixed } }\n`,
      dir,
    );
    const runs = await Promise.all(Array.from({ length: 20 }, (_, n) => startPlan(h, plan, { n })));
    for (const run of runs) expect((await h.client.result(run)).status).toBe('failed');
    writeFileSync(path.join(dir, 'fixed'), '');
    const env = { ...testServerEnv(), CADRE_TASK_QUEUE: h.taskQueue };
    // Visibility lags the server a little: the bulk fork lists what the server has indexed.
    await until('the 20 failed runs listed', async () => ((await h.client.list({ status: 'failed', plan: name })).length === 20 ? true : undefined), 30_000);
    const bulk = await runCadre(['fork', '--failed', '--from-failure', '--since', '1h', '--plan-name', name, '--task-queue', h.taskQueue, '--wait', '--json'], dir, env);
    expect(bulk).toMatchObject({ code: 0 });
    const report = JSON.parse(bulk.stdout) as { forked: { run: string; step: string; fork: string; status: string }[]; skipped: unknown[] };
    expect(report.skipped).toEqual([]);
    expect(report.forked.map((f) => f.run).sort()).toEqual([...runs].sort());
    expect(new Set(report.forked.map((f) => `${f.step} ${f.status}`))).toEqual(new Set(['check completed']));
    for (let n = 0; n < 20; n++) expect(readFileSync(path.join(dir, `prep-${n}.txt`), 'utf8')).toBe('prepared\n');
    const usage = await runCadre(['fork', '--failed', '--from', 'check', '--from-failure'], dir, env);
    expect(usage).toMatchObject({ code: 2, stderr: expect.stringContaining('--failed takes --from-failure (each run from its failed step) or --from <step> (the same step for all)') });
  });

  test('a session forked at message 5 holds its first five messages and their replies, and goes on from there; the old one is unchanged', async () => {
    const session = uniqueId('session');
    const start = { model: 'openai:gpt-4o-mini', tools: [], approvals: {}, workspace: ws };
    const words = ['one', 'two', 'three', 'four', 'five', 'six'];
    server.enqueue(...words.map((text) => ({ text: `reply ${text}` })));
    for (const text of words) await sendMessage(h.client, session, `message ${text}`, start, { taskQueue: h.taskQueue });
    server.requests.splice(0);
    const env = { ...testServerEnv(), CADRE_TASK_QUEUE: h.taskQueue };
    const forked = await runCadre(['fork', session, '--at', '5', '--json', '--task-queue', h.taskQueue], ws, env);
    expect(forked).toMatchObject({ code: 0 });
    const { workflowId } = JSON.parse(forked.stdout) as { workflowId: string };
    server.enqueue({ text: 'reply seven' });
    expect((await sendMessage(h.client, workflowId, 'message seven', start, { taskQueue: h.taskQueue })).reply).toBe('reply seven');
    const sent = (server.requests[0].body.messages as { role: string; content: unknown }[]).filter((m) => m.role !== 'system').map((m) => `${m.role}: ${JSON.stringify(m.content)}`);
    expect(sent).toEqual([...words.slice(0, 5).flatMap((w) => [`user: "message ${w}"`, `assistant: "reply ${w}"`]), 'user: "message seven"']);
    expect((await sessionDiagnostics(h.client, session)).answered).toBe(6);
    expect((await runCadre(['fork', session, '--at', '9', '--task-queue', h.taskQueue], ws, env)).stderr).toContain(`--at 9: ${session} holds 6 messages with their replies`);
    await Promise.all([endSession(h.client, session), endSession(h.client, workflowId)]);
  });

  test('an input given anew runs again the steps that read it, and those after them', async () => {
    server.enqueue({ text: 'dogs bark' }, { text: 'short' });
    const { workflowId } = await h.client.fork(original, { step: 'final', inputs: { topic: 'dogs' }, taskQueue: h.taskQueue });
    const d = await h.client.result(workflowId);
    expect(d.steps.filter((s) => s.note === undefined).map((s) => s.id)).toEqual(['draft', 'decide', 'final']);
    expect(JSON.stringify(server.requests[0].body.messages)).toContain('One line about dogs');
    expect(readFileSync(path.join(ws, 'counter.txt'), 'utf8')).toBe('1\n');
    expect(await finalOf(workflowId)).toBe('dogs bark | short | yes\n');
  });

  test('a forEach forked at one item runs that item again; the others are restored from the old run', async () => {
    const { workflowId } = await h.client.fork(original, { step: 'items[3]', taskQueue: h.taskQueue });
    const d = await h.client.result(workflowId);
    expect(d.forkedFrom).toEqual({ run: original, step: 'items[3]' });
    expect(step(d, 'items')).toMatchObject({ note: `ran again for item 3 only: its other 4 items restored from ${original}`, items: { total: 5, completed: 5 }, attempts: 1 });
    expect(d.steps.filter((s) => s.note?.startsWith('restored') !== true).map((s) => s.id)).toEqual(['items', 'final']);
    // Item 3 (the fourth, "4") wrote its line again; the other four did not.
    const lines = readFileSync(path.join(ws, 'items.txt'), 'utf8').trim().split('\n');
    expect(lines.slice(5)).toEqual(['item-4']);
    expect(server.requests).toHaveLength(0);
    const refused = async (named: string) => {
      const fork = await h.client.fork(original, { step: named, taskQueue: h.taskQueue });
      return (await waitUntil(h, fork.workflowId, (x) => x.status === 'failed')).reason;
    };
    expect(await refused('items[9]')).toContain(`fork.step: step "items" had 5 items in run ${original}: there is no item 9`);
    expect(await refused('draft[0]')).toContain('fork.step: step "draft" is not a forEach: "draft[0]" names no item');
  });
});
