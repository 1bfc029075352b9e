/**
 * A plan's budget under worker SIGKILLs (docs/budgets.md): a team worker and its subtask on a fake
 * model that never stops calling tools, the worker killed six times (ten with CADRE_FAULTS=full) while a model's reply streams
 * (the parent's turns and the subtask's), a new worker process taking over each time. The run ends
 * budget_exhausted within its cap, and its ledger holds exactly the usage of the replies the fake
 * server sent whole: a turn cut by a kill is counted once, by the attempt that finished it.
 */
import { CadreClient } from '../../src/client/client';
import { type FakeReply, startFakeModelServer } from '../support/fake-model-server';
import { compile, kill, prepareWorkerProcess, startWorkerProcess, step, tempWorkspace, uniqueId } from '../support/harness';

/** 10 with CADRE_FAULTS=full; CI's 12 minutes take 6 (each kill costs about 15 s: a worker's start and the turn's retry). */
const KILLS = process.env.CADRE_FAULTS === 'full' ? 10 : 6;
const BUDGET = 12_000;
const USAGE = { inputTokens: 400, outputTokens: 100 };

/** The model's turns: the parent starts one subtask, the subtask reads three times and is done, the parent reads for ever. */
function reply(body: Record<string, unknown>): FakeReply {
  const messages = body.messages as { role: string; content: unknown }[];
  const turns = messages.filter((m) => m.role === 'assistant').length;
  const call = (name: string, args: Record<string, unknown>) => ({ toolCalls: [{ id: `c${turns}-${Math.random().toString(36).slice(2, 8)}`, name, args }], usage: USAGE });
  if (JSON.stringify(messages.find((m) => m.role === 'user')?.content).includes('check the work')) {
    // The subtask: three reads, then it says it is done.
    return turns < 3 ? call('fs_read', { path: 'a.txt', from: turns + 1 }) : call('signal_state', { state: 'completing', reason: 'checked', result: 'all good' });
  }
  if (turns === 0) return call('spawn_subtask', { role: 'tester', prompt: 'check the work' });
  return call('fs_read', { path: 'a.txt', from: turns + 1 });
}

/** A held reply is cut once its kill is done (or failed: `killing` then fails the test). */
const cut = () => 'cut' as const;

test(`${KILLS} worker kills while replies stream: the ledger is the usage of the replies sent whole, to the token`, async () => {
  const ws = tempWorkspace();
  let kills = 0;
  let killing: Promise<void> = Promise.resolve();
  const taskQueue = uniqueId('budget-kills');
  // Every other reply streams slowly and the worker is killed in the middle of it: the reply's last
  // frames wait for the kill, so no kill can land in the milliseconds between the provider's last byte
  // and the turn's report, the one usage a ledger cannot see (docs/budgets.md, "Not yet").
  const server = await startFakeModelServer({
    respond: (body) => {
      const next = reply(body);
      if (kills >= KILLS || server.requests.length % 2 === 1) return next;
      kills++;
      const killed = (killing = killing.then(async () => {
        await new Promise((r) => setTimeout(r, 400));
        const ready = await held;
        await kill(worker, 'SIGKILL');
        worker = await ready.run();
        held = prepareWorkerProcess(taskQueue, env);
      }));
      return { ...next, chunks: Array.from({ length: 20 }, (_, i) => `part ${i} `), chunkDelayMs: 100, beforeEnd: () => killed.then(cut, cut) };
    },
  });
  const env = { OPENAI_API_KEY: 'sk-test-budget-kills', OPENAI_BASE_URL: server.baseURL, CADRE_MODEL: '' };
  const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
  let worker = await startWorkerProcess(taskQueue, env);
  let held = prepareWorkerProcess(taskQueue, env);
  const began = Date.now();
  try {
    const plan = compile(
      `name: budget-kills\nteam: { model: "openai:gpt-4o-mini" }\nbudget: { tokens: ${BUDGET}, onBudget: stop }\nsteps:\n  - { id: prep, tool: fs.write, with: { path: a.txt, content: "x" } }\n  - { id: work, dependsOn: [prep], agent: { role: implementer, prompt: "work on it", tools: [fs.read] } }\n`,
      ws,
    );
    const { workflowId } = await client.start(plan, {}, { workflowId: uniqueId('budget-kills'), taskQueue });
    const d = await client.result(workflowId);
    await killing;
    const billed = server.delivered.reduce((sum, u) => sum + u.inputTokens + u.outputTokens, 0);
    const subtask = d.workers?.find((w) => w.step === 'work/sub-1');
    process.stdout.write(`budget kills: ${kills}/${KILLS}, ${server.requests.length} requests, ${server.requests.length - server.delivered.length} cut by a kill, ${server.delivered.length} replies sent whole (${billed} tokens), ledger ${JSON.stringify(d.budget?.spent)}, subtask ${subtask?.state}, took ${Math.round((Date.now() - began) / 1000)} s\n`);
    expect(kills).toBe(KILLS);
    expect(d.status).toBe('budget_exhausted');
    expect(step(d, 'prep').status).toBe('completed');
    expect(subtask?.state).toBe('completed');
    // Nothing counted twice, nothing lost: the ledger is what the server billed, and within the cap.
    expect(d.budget).toMatchObject({ spent: { tokens: billed }, reserved: { tokens: 0 } });
    expect(billed).toBeLessThanOrEqual(BUDGET);
    // Each reply a kill cut was asked again: every request but those was answered whole.
    expect(server.requests.length - server.delivered.length).toBe(KILLS);
  } finally {
    await killing.catch(() => undefined);
    await kill(worker, 'SIGTERM');
    await held.then((h) => kill(h.child, 'SIGTERM'), () => undefined);
    await client.close();
    await server.close();
  }
}, 10 * 60_000);
