/**
 * A worker SIGKILLed in the middle of an agent's loop: a new worker finishes the conversation,
 * and no completed model turn is paid for twice (the fake provider counts every request).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CadreClient } from '../../src/client/client';
import { agentDiagnosticsQuery } from '../../src/protocol/definitions';
import { startFakeModelServer } from '../support/fake-model-server';
import { compile, kill, startWorkerProcess, step, tempWorkspace, uniqueId } from '../support/harness';

const TURNS = 6;
const KILL_AT_TURN = 3;

test('a worker killed mid-loop is replaced; the agent finishes and the provider sees each completed turn once', async () => {
  const ws = tempWorkspace();
  const server = await startFakeModelServer();
  // Each turn's tool call appends to calls.log and takes a while, so the kill lands inside a tool call.
  for (let turn = 1; turn <= TURNS; turn++) {
    server.enqueue({ toolCalls: [{ id: `t${turn}`, name: 'shell', args: { command: `echo t${turn} >> calls.log; sleep 1.5` } }], usage: { inputTokens: turn, outputTokens: 1 } });
  }
  server.enqueue({ text: 'all done', usage: { inputTokens: 100, outputTokens: 1 } });
  writeFileSync(path.join(ws, 'calls.log'), '');
  const plan = compile(
    `
name: agent-kill
steps:
  - { id: worker, agent: { prompt: "run the six steps", model: "openai:gpt-4o-mini", tools: [shell], maxTurns: 10 } }
output: "{{ steps.worker.output }}"
`,
    ws,
  );
  const env = { OPENAI_API_KEY: 'sk-test-kill', OPENAI_BASE_URL: server.baseURL, CADRE_MODEL: '', CADRE_AUDIT_DIR: path.join(ws, '.audit') };
  const taskQueue = uniqueId('agent-kill');
  const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
  let worker = await startWorkerProcess(taskQueue, env);
  try {
    const { workflowId } = await client.start(plan, {}, { workflowId: uniqueId('agent-kill'), taskQueue });
    const agent = client.client.workflow.getHandle(`${workflowId}/worker`);
    // Kill while turn 3's tool runs: its model turn has completed, its tool call has not.
    for (const deadline = Date.now() + 60_000; ; ) {
      const d = await agent.query(agentDiagnosticsQuery).catch(() => undefined);
      if (d && d.turns === KILL_AT_TURN && d.running.length > 0) break;
      if (Date.now() > deadline) throw new Error(`the agent never reached turn ${KILL_AT_TURN}: ${JSON.stringify(d)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const seenAtKill = server.requests.length;
    await kill(worker, 'SIGKILL');
    worker = await startWorkerProcess(taskQueue, env);
    const d = await client.result(workflowId);
    expect(d.status).toBe('completed');
    expect(d.output).toBe('all done');
    expect(step(d, 'worker').agent).toMatchObject({ turns: TURNS + 1, toolCalls: TURNS });
    expect(seenAtKill).toBe(KILL_AT_TURN);
    // Every model turn reached the provider exactly once, the ones before the kill included.
    expect(server.requests).toHaveLength(TURNS + 1);
    const lastTurnsResults = (server.requests[TURNS].body.messages as { role: string }[]).filter((m) => m.role === 'tool');
    expect(lastTurnsResults).toHaveLength(TURNS);
    // Tool calls that completed before the kill ran once; the one in flight ran at least once (at-least-once).
    const calls = readFileSync(path.join(ws, 'calls.log'), 'utf8').trim().split('\n');
    const count = (id: string) => calls.filter((c) => c === id).length;
    for (let turn = 1; turn <= TURNS; turn++) {
      if (turn === KILL_AT_TURN) expect(count(`t${turn}`)).toBeGreaterThanOrEqual(1);
      else expect(count(`t${turn}`)).toBe(1);
    }
    process.stdout.write(`agent kill: killed at turn ${KILL_AT_TURN}; provider saw ${server.requests.length} requests for ${TURNS + 1} turns; in-flight tool ran ${count(`t${KILL_AT_TURN}`)}×\n`);
  } finally {
    await kill(worker, 'SIGTERM');
    await client.close();
    await server.close();
  }
});
