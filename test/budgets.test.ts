/**
 * An agent's budget (docs/budgets.md) on the dev server, with the fake model server: every turn is
 * held to what is left before it starts, the ledger is what the server reported, and at the cap the
 * agent stops, or waits for a person who extends it.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { findTemporalCli } from '../src/worker/temporal-cli';
import { CLI_POLL_MS, until } from './support/until';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { auditSinks } from '../src/worker/audit-log';
import { modelSettings } from '../src/providers/config';
import { type FakeModelServer, type FakeReply, startFakeModelServer } from './support/fake-model-server';
import { runCadre, testServerEnv } from './support/cli';
import { type Harness, compile, sharedWorker, startPlan, step, tempWorkspace, uniqueId, waitUntil } from './support/harness';
import { endSession, sendMessage, sessionDiagnostics, sessionInput } from '../src/client/sessions';
import { parseBudgetOption } from '../src/client/budget-option';
import { type AgentDiagnostics, agentDiagnosticsQuery } from '../src/protocol/definitions';
import { estimateTokens } from '../src/providers/context-window';
import { MIN_TURN_OUTPUT } from '../src/providers/turn-budget';

const run = promisify(execFile);
let server: FakeModelServer;
let h: Harness;
let stop: () => Promise<void>;

beforeAll(async () => {
  server = await startFakeModelServer();
  const models = modelSettings({ prices: { 'openai:gpt-4o-mini': { input: 0.15, output: 0.6 } } }, { OPENAI_API_KEY: 'sk-test-budgets', OPENAI_BASE_URL: server.baseURL });
  ({ h, stop } = await sharedWorker('tq-budgets', { activityDeps: { models } }));
}, 60_000);
afterAll(async () => {
  await stop?.();
  await server?.close();
});
beforeEach(() => server.reset());

/** A model that never stops calling tools: each turn reads the file again, 400 tokens in and 100 out. */
const reading = (n: number): FakeReply[] => Array.from({ length: n }, (_, i) => ({ toolCalls: [{ id: `r${i}`, name: 'fs_read', args: { path: 'a.txt' } }], usage: { inputTokens: 400, outputTokens: 100 } }));

const plan = (budget: string) =>
  `name: budgeted\nsteps:\n  - { id: prep, tool: fs.write, with: { path: a.txt, content: "x" } }\n  - { id: work, dependsOn: [prep], agent: { prompt: "Read a.txt, again and again", model: "openai:gpt-4o-mini", tools: [fs.read], budget: ${budget} } }\n`;

/** What each request allowed the model to write. */
const maxTokensOf = (body: Record<string, unknown>) => (body.max_completion_tokens ?? body.max_tokens) as number | undefined;

describe('an agent budget', () => {
  test('onBudget stop: each turn held to what is left; the turn that does not fit never starts; the ledger is what the server reported', async () => {
    server.enqueue(...reading(10));
    const id = await startPlan(h, compile(plan('{ tokens: 1500, onBudget: stop }'), tempWorkspace()));
    const ended = await waitUntil(h, id, (x) => x.status === 'budget_exhausted');
    expect(ended.reason).toContain('work spent its budget');
    expect(step(ended, 'prep').status).toBe('completed');
    expect(step(ended, 'work')).toMatchObject({ status: 'failed', error: expect.stringContaining('work spent its budget') });
    const requests = server.requests.length;
    expect(requests).toBeGreaterThanOrEqual(1);
    // The ledger: exactly the usage the server reported, within the cap.
    const budget = step(ended, 'work').agent?.budget;
    expect(budget).toEqual({ limits: { tokens: 1500 }, spent: { tokens: 500 * requests, toolCalls: requests, cost: expect.any(Number) } });
    expect(500 * requests).toBeLessThanOrEqual(1500);
    expect(budget?.spent.cost).toBeCloseTo((requests * (400 * 0.15 + 100 * 0.6)) / 1e6, 12);
    console.log(`budget stop: ${requests} turns, ${budget?.spent.tokens} of 1500 tokens; max output asked: ${server.requests.map((r) => maxTokensOf(r.body)).join(', ')}`);
    // Each request let the model write no more than what was left after what it sends.
    server.requests.forEach((r, i) => expect(maxTokensOf(r.body)).toBeLessThanOrEqual(1500 - 500 * i));
    // A status of its own, never failed: cadre status and list, and the temporal CLI by CadreStatus.
    const env = { ...testServerEnv(), CADRE_TASK_QUEUE: h.taskQueue };
    expect((await runCadre(['status', id], tempWorkspace(), env)).stdout).toContain('budget_exhausted');
    const listed = await until('the run listed by its status', async () => {
      const rows = (status: string) => runCadre(['list', '--status', status, '--plan', 'budgeted', '--json'], tempWorkspace(), env).then((r) => (JSON.parse(r.stdout) as { workflowId: string }[]).map((x) => x.workflowId));
      const [exhausted, failed] = await Promise.all([rows('budget_exhausted'), rows('failed')]);
      return exhausted.includes(id) ? { exhausted, failed } : undefined;
    }, 15_000, CLI_POLL_MS);
    expect(listed.failed).not.toContain(id);
    const temporal = await findTemporalCli({ build: false });
    if (!temporal) throw new Error('the temporal CLI is needed for this test (run .ci/run once to build it)');
    const { stdout } = await run(temporal, ['workflow', 'list', '--address', process.env.CADRE_TEST_ADDRESS as string, '--query', `CadreStatus="budget_exhausted" AND WorkflowId="${id}"`, '--output', 'json']);
    expect(stdout).toContain(id);
    // The run's history replays; the first recorded is kept for CI's replay test.
    const history = await h.client.client.workflow.getHandle(id).fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string }, sinks: auditSinks(tempWorkspace()) }, history, id);
    const file = path.join(__dirname, 'histories', 'run-plan-budget-exhausted.json');
    if (!existsSync(file)) writeFileSync(file, `${historyToJSON(history)}\n`);
  });

  test('onBudget ask: at the cap the run waits for a person; extend=<tokens> goes on, and the model was told to wrap up past 80%', async () => {
    server.enqueue(...reading(2), { toolCalls: [{ id: 'last', name: 'fs_read', args: { path: 'a.txt' } }], usage: { inputTokens: 400, outputTokens: 100 } }, { text: 'done', usage: { inputTokens: 400, outputTokens: 10 } });
    const ws = tempWorkspace();
    const id = await startPlan(h, compile(plan('{ tokens: 1200 }'), ws));
    const waiting = await waitUntil(h, id, (x) => x.waiting.some((w) => w.kind === 'budget'));
    const wait = waiting.waiting.find((w) => w.kind === 'budget');
    expect(wait).toMatchObject({ id: 'work/budget-1', prompt: expect.stringContaining('work spent its budget (1000 of 1200 tokens)') });
    expect(server.requests).toHaveLength(2);
    const env = { ...testServerEnv(), CADRE_TASK_QUEUE: h.taskQueue };
    expect((await runCadre(['answer', id, 'work/budget-1', 'more please'], ws, env)).stderr).toContain('answer extend=<more> (a number above 0) or stop');
    expect(await runCadre(['answer', id, 'work/budget-1', 'extend=2000'], ws, env)).toMatchObject({ code: 0 });
    const done = await h.client.result(id);
    expect(done.status).toBe('completed');
    expect(step(done, 'work').agent?.budget).toMatchObject({ limits: { tokens: 3200 }, spent: { tokens: 1910, toolCalls: 3 } });
    // Past 80% of 1200, the next turn the model took was told what was left.
    expect(JSON.stringify(server.requests[2].body.messages)).toContain('Budget: 1000 of 1200 tokens used. Wrap up');
    expect(JSON.stringify(server.requests[1].body.messages)).not.toContain('Budget:');
    // The agent's history (a turn held back at the cap, a person's extension) replays; the first one recorded is kept for CI's replay test.
    const agentId = step(done, 'work').agent?.workflowId as string;
    const history = await h.client.client.workflow.getHandle(agentId).fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string }, sinks: auditSinks(tempWorkspace()) }, history, agentId);
    const file = path.join(__dirname, 'histories', 'agent-task-budget.json');
    if (!existsSync(file)) writeFileSync(file, `${historyToJSON(history)}\n`);
    // And the run's stream said so.
    const warnings = [];
    for await (const e of h.client.events(id)) if (e.type === 'budget_warning') warnings.push(e);
    expect(warnings).toEqual([expect.objectContaining({ step: 'work', message: 'work: 1000 of 1200 tokens used (warning at 80%)' })]);
  });

  test('a cost budget on a model with no price fails the agent at once, naming the fix; a team agent with a budget is refused when the plan is checked', async () => {
    const unpriced = `name: unpriced\nsteps:\n  - { id: work, agent: { prompt: hi, model: "openai:gpt-4o", budget: { cost: 0.5, onBudget: stop } } }\n`;
    const id = await startPlan(h, compile(unpriced, tempWorkspace()));
    const d = await waitUntil(h, id, (x) => x.status === 'failed');
    expect(step(d, 'work').error).toContain('no price for openai:gpt-4o in cadre.config.yaml (models.prices): a cost budget needs one');
    expect(server.requests).toHaveLength(0);
    expect(() => compile(`name: t\nteam: {}\nsteps:\n  - { id: w, agent: { prompt: hi, budget: { tokens: 10 } } }\n`, tempWorkspace())).toThrow("steps[0].agent.budget: a team's agents share the plan's budget");
  });

  test("a session's budget spans its replies and its runs: carried over continue-as-new; at the cap a message is refused, the session going on", async () => {
    const ws = tempWorkspace();
    const id = uniqueId('budget-session');
    const cli = await runCadre(['send', id, 'x', '--budget', 'tokens=500,cost=-1'], ws, { ...testServerEnv(), CADRE_TASK_QUEUE: h.taskQueue });
    expect(cli).toMatchObject({ code: 2, stderr: expect.stringContaining('cost: USD above 0, not "-1"') });
    const start = { ...sessionInput({ model: 'openai:gpt-4o-mini', workspace: ws, budget: parseBudgetOption('tokens=500,onBudget=stop') }), continueEvery: 1 };
    // Any client may leave out warnAt and onBudget; a session takes the defaults (ask).
    const other = uniqueId('budget-session-defaults');
    server.enqueue({ text: 'hi', usage: { inputTokens: 10, outputTokens: 10 } });
    await sendMessage(h.client, other, 'hello', { ...start, budget: { tokens: 1000 } }, { taskQueue: h.taskQueue });
    expect((await sessionDiagnostics(h.client, other)).budget).toEqual({ limits: { tokens: 1000 }, spent: { tokens: 20, toolCalls: 0, cost: expect.closeTo((10 * 0.15 + 10 * 0.6) / 1e6, 12) } });
    await endSession(h.client, other);
    server.reset();
    server.enqueue({ text: 'one', usage: { inputTokens: 50, outputTokens: 200 } }, { text: 'two', usage: { inputTokens: 50, outputTokens: 200 } }, { text: 'three' });
    expect(await sendMessage(h.client, id, 'first', start, { taskQueue: h.taskQueue })).toMatchObject({ reply: 'one', run: 1 });
    expect(await sendMessage(h.client, id, 'second', start, { taskQueue: h.taskQueue })).toMatchObject({ reply: 'two', run: 2 });
    await expect(sendMessage(h.client, id, 'third', start, { taskQueue: h.taskQueue })).rejects.toThrow('session spent its budget (500 of 500 tokens)');
    expect(server.requests).toHaveLength(2);
    const d = await sessionDiagnostics(h.client, id);
    expect(d).toMatchObject({ answered: 2, budget: { limits: { tokens: 500 }, spent: { tokens: 500, toolCalls: 0 } } });
    expect(d.run).toBeGreaterThanOrEqual(3);
    await endSession(h.client, id);
  });
});

describe("a plan's budget", () => {
  /** What each tool-calling reply reported spending: the runaway's ledger must equal this many tokens a request, to the token. */
  const PER_TURN = { inputTokens: 400, outputTokens: 100 };
  const named = (body: Record<string, unknown>) => ((body.tools ?? []) as { function: { name: string } }[]).map((t) => t.function.name);
  const spawned = (body: Record<string, unknown>) => (body.messages as { role: string; tool_calls?: unknown }[]).some((m) => m.role === 'assistant' && JSON.stringify(m.tool_calls ?? []).includes('spawn_subtask'));
  /** A team that never stops: each worker starts one subtask, then everyone reads a file forever. */
  const runaway = (body: Record<string, unknown>): FakeReply => {
    const subtask = JSON.stringify(body.messages).includes('check the work');
    const call = named(body).includes('spawn_subtask') && !subtask && !spawned(body) ? { name: 'spawn_subtask', args: { role: 'tester', prompt: 'check the work' } } : { name: 'fs_read', args: { path: 'a.txt', from: 1 + Math.floor(Math.random() * 1e6) } };
    return { toolCalls: [{ id: `c${Math.random().toString(36).slice(2, 8)}`, ...call }], usage: PER_TURN };
  };
  let loose: FakeModelServer;
  let lh: Harness;
  let stopLoose: () => Promise<void>;
  beforeAll(async () => {
    loose = await startFakeModelServer({ respond: runaway });
    const models = modelSettings({ prices: { 'openai:gpt-4o-mini': { input: 0.15, output: 0.6 } } }, { OPENAI_API_KEY: 'sk-test-budgets', OPENAI_BASE_URL: loose.baseURL });
    ({ h: lh, stop: stopLoose } = await sharedWorker('tq-plan-budgets', { activityDeps: { models } }));
  }, 60_000);
  afterAll(async () => {
    await stopLoose?.();
    await loose?.close();
  });
  beforeEach(() => loose.reset());

  const worker = (id: string, role: string) => `  - { id: ${id}, dependsOn: [prep], agent: { role: ${role}, prompt: "work on ${id}", model: "openai:gpt-4o-mini", tools: [fs.read] } }\n`;
  const prep = '  - { id: prep, tool: fs.write, with: { path: a.txt, content: "x" } }\n';

  test('a runaway team of three, with subtasks, spends at most its 20,000 tokens; the ledger is what the server reported, to the token; the run ends budget_exhausted', async () => {
    const ws = tempWorkspace();
    const text = `name: runaway-team\nteam: { maxSubtasks: 1, model: "openai:gpt-4o-mini" }\nbudget: { tokens: 20000, onBudget: stop }\nsteps:\n${prep}${worker('a', 'implementer')}${worker('b', 'tester')}${worker('c', 'reviewer')}`;
    const id = await startPlan(lh, compile(text, ws));
    const d = await lh.client.result(id);
    if (d.status !== 'budget_exhausted') console.log(JSON.stringify({ reason: d.reason, steps: d.steps, errors: d.errors, budget: d.budget }, null, 1));
    expect(d.status).toBe('budget_exhausted');
    expect(d.reason).toContain('the run spent its budget');
    expect(step(d, 'prep').status).toBe('completed');
    const turns = loose.requests.length;
    const subtasks = (d.workers ?? []).filter((w) => w.step.includes('/sub-'));
    console.log(`runaway team: ${turns} turns by ${d.workers?.length} agents (${subtasks.length} subtasks), ledger ${JSON.stringify(d.budget)}`);
    expect(subtasks.length).toBeGreaterThanOrEqual(1);
    // Every turn the server answered is in the ledger once; nothing is still held; within the cap.
    expect(d.budget).toMatchObject({ limits: { tokens: 20000 }, spent: { tokens: turns * 500 }, reserved: { tokens: 0, toolCalls: 0, cost: 0 } });
    expect(turns * 500).toBeLessThanOrEqual(20000);
    // And it stopped only when a turn no longer fit: what the agents held unspent was recalled first,
    // so what is left is less than about one turn's input (the next turn's, a little more than the biggest sent).
    const biggest = Math.max(...loose.requests.map((r) => estimateTokens(JSON.stringify({ tools: r.body.tools, messages: r.body.messages }))));
    console.log(`runaway team: ${20000 - turns * 500} tokens left; the biggest turn sent about ${biggest} tokens; ${d.reason}`);
    expect(20000 - turns * 500).toBeLessThan(2 * biggest + MIN_TURN_OUTPUT);
    expect(d.budget?.spent.cost).toBeCloseTo((turns * (400 * 0.15 + 100 * 0.6)) / 1e6, 12);
    const env = { ...testServerEnv(), CADRE_TASK_QUEUE: lh.taskQueue };
    expect((await runCadre(['status', id], ws, env)).stdout).toContain(`budget: ${turns * 500} of 20000 tokens spent`);
    const history = await lh.client.client.workflow.getHandle(id).fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string }, sinks: auditSinks(tempWorkspace()) }, history, id);
    const file = path.join(__dirname, 'histories', 'run-plan-team-budget.json');
    if (!existsSync(file)) writeFileSync(file, `${historyToJSON(history)}\n`);
  });

  test("a role file narrows its agents' budgets: the subtask of a capped role stops at its cap, its parent goes on to the plan's", async () => {
    const ws = tempWorkspace();
    // The plan's own tester role, as the built-in one but capped: each of its agents, 3,000 tokens of its own turns.
    mkdirSync(path.join(ws, 'roles'));
    const tester = readFileSync(path.join(__dirname, '..', 'roles', 'tester.yaml'), 'utf8');
    writeFileSync(path.join(ws, 'roles', 'tester.yaml'), `${tester.trimEnd()}\nbudget: { tokens: 3000, onBudget: stop }\n`);
    const text = `name: role-budget\nteam: { maxSubtasks: 1, model: "openai:gpt-4o-mini" }\nbudget: { tokens: 8000, onBudget: stop }\nsteps:\n${prep}${worker('a', 'implementer')}`;
    const d = await lh.client.result(await startPlan(lh, compile(text, ws)));
    expect(d.status).toBe('budget_exhausted');
    const sub = (d.workers ?? []).find((w) => w.step === 'a/sub-1');
    expect(sub).toMatchObject({ role: 'tester', state: 'error' });
    const a: AgentDiagnostics = await lh.client.client.workflow.getHandle(sub?.workflowId as string).query(agentDiagnosticsQuery);
    const subTurns = loose.requests.filter((r) => JSON.stringify((r.body.messages as { role: string; content: unknown }[]).find((m) => m.role === 'user')?.content).includes('check the work')).length;
    console.log(`role budget: the subtask took ${subTurns} turns (${a.usage.inputTokens + a.usage.outputTokens} tokens) under its role's 3000; the run ${d.budget?.spent.tokens} of 8000`);
    expect(a.usage.inputTokens + a.usage.outputTokens).toBe(subTurns * 500);
    expect(subTurns * 500).toBeLessThanOrEqual(3000);
    expect(subTurns).toBeGreaterThanOrEqual(2);
    // Its parent went on after it stopped: the plan's budget, not the role's, ended the run.
    expect(d.reason).toContain('the run spent its budget');
    expect(d.budget?.spent.tokens).toBe(loose.requests.length * 500);
  });

  test('onBudget ask: the run waits for a person (budget-1); extend=<tokens> lets the agents go on to the end, told past 80% to wrap up', async () => {
    server.reset();
    loose.enqueue(...reading(2), { text: 'done', usage: { inputTokens: 400, outputTokens: 10 } }, { text: 'done too', usage: { inputTokens: 400, outputTokens: 10 } });
    const ws = tempWorkspace();
    const text = `name: asked-budget\nbudget: { tokens: 1200 }\nsteps:\n${prep}  - { id: work, dependsOn: [prep], agent: { prompt: "Read a.txt", model: "openai:gpt-4o-mini", tools: [fs.read] } }\n  - { id: sum, dependsOn: [work], decide: { prompt: "Is it done?", choices: [done, "done too"], model: "openai:gpt-4o-mini" } }\n`;
    const id = await startPlan(lh, compile(text, ws));
    const waiting = await waitUntil(lh, id, (x) => x.waiting.some((w) => w.kind === 'budget'));
    expect(waiting.status).toBe('waiting');
    expect(waiting.waiting.find((w) => w.kind === 'budget')).toMatchObject({ id: 'budget-1', prompt: expect.stringContaining('the run spent its budget (1000 of 1200 tokens)') });
    const env = { ...testServerEnv(), CADRE_TASK_QUEUE: lh.taskQueue };
    expect((await runCadre(['answer', id, 'budget-1', 'more'], ws, env)).stderr).toContain('answer extend=<more> (a number above 0) or stop');
    expect(await runCadre(['answer', id, 'budget-1', 'extend=3000'], ws, env)).toMatchObject({ code: 0 });
    const d = await lh.client.result(id);
    if (d.status !== 'completed') console.log(JSON.stringify({ reason: d.reason, steps: d.steps, errors: d.errors, budget: d.budget }, null, 1));
    expect(d.status).toBe('completed');
    expect(d.budget).toMatchObject({ limits: { tokens: 4200 }, spent: { tokens: 1000 + 410 + 410, toolCalls: 2 }, reserved: { tokens: 0 } });
    expect(loose.requests.slice(2).some((r) => JSON.stringify(r.body.messages).includes("The run's budget: 1000 of 1200 tokens used. Wrap up"))).toBe(true);
    // The run's stream said the spend as it grew, ending with what was spent (what `cadre watch` prints).
    const used: string[] = [];
    for await (const e of lh.client.events(id)) if (e.type === 'budget_spent') used.push(e.used);
    expect(used.length).toBeGreaterThanOrEqual(3);
    expect(used.at(-1)).toBe('1820 of 4200 tokens');
    // The agent's history (its lease asked for more, held at the cap, then granted) replays; the first recorded is kept for CI's replay test.
    const agentId = step(d, 'work').agent?.workflowId as string;
    const history = await lh.client.client.workflow.getHandle(agentId).fetchHistory();
    await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string }, sinks: auditSinks(tempWorkspace()) }, history, agentId);
    const file = path.join(__dirname, 'histories', 'agent-task-lease.json');
    if (!existsSync(file)) writeFileSync(file, `${historyToJSON(history)}\n`);
  });

  test('a time budget stops a run that sleeps past it; a cost budget with an unpriced model is refused when the plan is checked', async () => {
    const text = `name: timed\nbudget: { time: 2s, onBudget: stop }\nsteps:\n  - { id: first, tool: fs.write, with: { path: a.txt, content: hi } }\n  - { id: nap, dependsOn: [first], tool: sleep, with: { duration: 10m } }\n`;
    const id = await startPlan(lh, compile(text, tempWorkspace()));
    const d = await lh.client.result(id);
    expect(d).toMatchObject({ status: 'budget_exhausted', reason: expect.stringContaining('its time budget (2s) ended') });
    expect(step(d, 'first').status).toBe('completed');
    expect(d.elapsedMs).toBeLessThan(60_000);
    expect(() => compile(`name: t\nbudget: { warnAt: 0.5 }\nsteps:\n  - { id: w, agent: { prompt: hi } }\n`, tempWorkspace())).toThrow('a budget caps tokens, toolCalls, cost (USD) or time');
    // With ask, past its time the run starts no new step until a person extends it (in seconds).
    const asked = `name: timed-ask\nbudget: { time: 1s }\nsteps:\n  - { id: nap, tool: sleep, with: { duration: 3s } }\n  - { id: after, dependsOn: [nap], tool: fs.write, with: { path: b.txt, content: done } }\n`;
    const askId = await startPlan(lh, compile(asked, tempWorkspace()));
    const waiting = await waitUntil(lh, askId, (x) => x.waiting.some((w) => w.id === 'budget-1') && step(x, 'nap').status === 'completed');
    expect(waiting.waiting.find((w) => w.id === 'budget-1')?.prompt).toContain('its time budget (1s) ended');
    await new Promise((r) => setTimeout(r, 1000));
    expect(step(await lh.client.diagnostics(askId), 'after').status).toBe('pending');
    await lh.client.answer(askId, 'budget-1', 'extend=60');
    const extended = await lh.client.result(askId);
    expect(extended.status).toBe('completed');
    expect(Date.parse(extended.budget?.deadline as string) - Date.parse(extended.startedAt)).toBeGreaterThan(60_000);
  });
});
