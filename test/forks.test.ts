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
import { type Harness, compile, startPlan, startWorker, step, tempWorkspace, uniqueId, waitUntil } from './support/harness';
import { CadreClient } from '../src/client/client';
import { endSession, sendMessage, sessionDiagnostics } from '../src/client/sessions';
import { until } from './support/until';
import { findTemporalCli } from '../src/worker/temporal-cli';

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
  const taskQueue = uniqueId('tq-forks');
  const { worker, connection } = await startWorker(taskQueue, { activityDeps: { models } });
  const running = worker.run();
  const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
  h = { client, taskQueue };
  stop = async () => {
    worker.shutdown();
    await running;
    await client.close();
    await connection.close();
  };
  ws = tempWorkspace();
  original = await ranOnce();
}, 120_000);
afterAll(async () => {
  await stop?.();
  await server?.close();
});
beforeEach(() => {
  server.requests.splice(0);
  server.clearQueue();
});

/** A shell step that counts its runs in counter.txt, a forEach of 5, an agent, a question, a decision, and a last step that reads them. */
const PLAN = `
name: forkable
inputs: { topic: { type: string, default: cats } }
steps:
  - { id: count, tool: shell, with: { command: "n=$(cat counter.txt 2>/dev/null || echo 0); echo $((n+1)) > counter.txt" } }
  - { id: items, forEach: [1, 2, 3, 4, 5], tool: shell, with: { command: "echo item-{{ item }} >> items.txt" } }
  - { id: draft, dependsOn: [count], agent: { prompt: "One line about {{ inputs.topic }}", model: "openai:gpt-4o-mini" } }
  - { id: approve, ask: { question: "Ship it?", choices: [yes, no] } }
  - { id: decide, dependsOn: [draft], decide: { prompt: "Is this short? {{ steps.draft.output }}", choices: [short, long], model: "openai:gpt-4o-mini" } }
  - { id: final, dependsOn: [decide, approve, items], tool: shell, with: { command: "echo '{{ steps.draft.output }} | {{ steps.decide.output }} | {{ steps.approve.output }}' > final.txt" } }
`;

async function ranOnce(): Promise<string> {
  server.enqueue({ text: 'cats purr' }, { text: 'short' });
  const id = await startPlan(h, compile(PLAN, ws));
  await waitUntil(h, id, (d) => d.waiting.some((w) => w.id === 'approve'));
  await h.client.answer(id, 'approve', 'yes');
  expect((await h.client.result(id)).status).toBe('completed');
  expect(readFileSync(path.join(ws, 'final.txt'), 'utf8')).toBe('cats purr | short | yes\n');
  server.requests.splice(0);
  return id;
}

describe('cadre fork', () => {
  test('forked at the decision with the agent\'s output set: nothing before it runs or is paid again, the question is not asked again, and the last step sees the new output', async () => {
    server.enqueue({ text: 'long' });
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
    expect(readFileSync(path.join(ws, 'final.txt'), 'utf8')).toBe('dogs bark | long | yes\n');
    expect(d.steps.map((s) => [s.id, s.status, s.note])).toEqual([
      ['count', 'completed', `restored from ${original}`],
      ['items', 'completed', `restored from ${original}`],
      ['draft', 'completed', `restored from ${original}, its output set by the fork`],
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
    expect((await runCadre(['diff', original, forkId], ws, env)).stdout).toMatch(new RegExp(`^${original} → ${forkId}: 3 of 6 steps differ\n  draft: output \\$: "cats purr" → "dogs bark"\n`));
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
    }, 15_000);
    expect(lineage).toEqual({ cadre: [forkId], temporal: [forkId] });
    // The fork replays from its history.
    const history = await h.client.client.workflow.getHandle(forkId).fetchHistory();
    expect((history.events ?? []).filter((e) => e.workflowTaskFailedEventAttributes)).toEqual([]);
    await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string }, sinks: auditSinks(tempWorkspace()) }, history, forkId);
    const file = path.join(__dirname, 'histories', 'run-plan-fork.json');
    if (!existsSync(file)) writeFileSync(file, `${historyToJSON(history)}\n`);
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
    const open = await startPlan(h, compile(PLAN, tempWorkspace()));
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
    expect(readFileSync(path.join(ws, 'final.txt'), 'utf8')).toBe('dogs bark | short | yes\n');
  });
});
