/**
 * Stuck detection: a team worker whose worker process dies in the middle of a tool call goes
 * silent (no heartbeat, no state signal). Another worker process takes over, and the worker is
 * reported blocked in its diagnostics, the team run, the search attribute and the audit log, 10 s
 * (the default) after its last sign of life; never reported completed. The watch that notices runs
 * as an activity (retried on the live worker), so the report does not wait out the dead worker's
 * sticky queue as a timer of the workflow's own would (up to 10 s more).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import path from 'node:path';
import YAML from 'yaml';
import { CadreClient } from '../../src/client/client';
import { auditFile } from '../../src/store/audit-files';
import { type AgentDiagnostics, agentDiagnosticsQuery } from '../../src/protocol/definitions';
import { compile, kill, startWorker, startWorkerProcess, tempWorkspace, uniqueId } from '../support/harness';
import { until } from '../support/until';
import { Worker } from '@temporalio/worker';
import { auditSinks } from '../../src/worker/audit-log';

test('a worker that goes silent mid-tool is reported blocked, not completed', async () => {
  const ws = tempWorkspace();
  const scenario = path.join(ws, 'worker.yaml');
  writeFileSync(scenario, YAML.stringify({ turns: [{ reply: { toolCalls: [{ name: 'shell', args: { command: 'sleep 120' } }] } }] }));
  const plan = compile(`name: team-stuck\nteam: {}\nsteps:\n  - { id: w, agent: { prompt: go, model: "scripted:${scenario}", tools: [shell] } }\n`, ws);
  const auditDir = path.join(ws, '.audit');
  const taskQueue = uniqueId('team-stuck');
  const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
  const first = await startWorkerProcess(taskQueue, { CADRE_AUDIT_DIR: auditDir });
  let second: Awaited<ReturnType<typeof startWorker>> | undefined;
  let running: Promise<void> | undefined;
  const { workflowId } = await client.start(plan, {}, { workflowId: uniqueId('team-stuck'), taskQueue });
  const agent = client.client.workflow.getHandle(`${workflowId}/w`);
  try {
    await until('the agent running shell', async () => (await agent.query(agentDiagnosticsQuery).catch(() => undefined))?.running.includes('shell') || undefined, 20_000, 250);
    // The tool beats while its worker lives: no false alarm in the first seconds.
    await new Promise((r) => setTimeout(r, 3000));
    expect((await agent.query(agentDiagnosticsQuery)).state).toBe('running');
    await kill(first, 'SIGKILL');
    const killedAt = Date.now();
    second = await startWorker(taskQueue, { auditDir });
    running = second.worker.run();
    // Queries fail while the run's workflow still sits on the dead worker's sticky queue: ask again.
    await until('the worker reported blocked', async () => (await client.diagnostics(workflowId).catch(() => undefined))?.workers?.[0]?.state === 'blocked' || undefined, 40_000, 250);
    const reportedAfterMs = Date.now() - killedAt;
    const a: AgentDiagnostics = await agent.query(agentDiagnosticsQuery);
    expect(a.state).toBe('blocked');
    expect(a.transitions.at(-1)?.reason).toMatch(/^no progress, heartbeat or state signal for \d+ s \(running: shell\)$/);
    expect(a.transitions.map((t) => t.to)).not.toContain('completed');
    expect((await agent.describe()).searchAttributes.CadreWorkerState).toEqual(['blocked']);
    const audit = readFileSync(auditFile(auditDir, workflowId), 'utf8');
    expect(audit).toMatch(/"event":"worker\.state".*"state":"blocked"/);
    // 10 s of silence (its last beat came up to 2 s before the kill), then the watch's report
    // (0.5-1.2 s here). Waiting out the dead worker's sticky queue took 16.8-17 s.
    process.stdout.write(`team-stuck: reported blocked ${reportedAfterMs} ms after the kill\n`);
    expect(reportedAfterMs).toBeLessThan(13_000);
    // The watch told the server to send both workflows to any worker: neither waited out the dead one's sticky queue.
    // And both replay: a worker's death is where a decision on the workflow's clock did not (stuck-watch.ts).
    for (const id of [workflowId, `${workflowId}/w`]) {
      const history = await client.client.workflow.getHandle(id).fetchHistory();
      const timedOut = (history.events ?? []).filter((e) => e.workflowTaskTimedOutEventAttributes);
      expect(timedOut).toEqual([]);
      await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string }, sinks: auditSinks(tempWorkspace()) }, history, id);
      // The first recording of the worker's is kept for replay.test.ts.
      const file = path.join(__dirname, '..', 'histories', 'agent-task-stuck-recorded.json');
      if (id !== workflowId && !existsSync(file)) writeFileSync(file, `${historyToJSON(history)}\n`);
    }
  } finally {
    await client.client.workflow.getHandle(workflowId).cancel().catch(() => undefined);
    await kill(first, 'SIGKILL');
    second?.worker.shutdown();
    await running?.catch(() => undefined);
    await second?.connection.close();
    await client.close();
  }
}, 90_000);

test('with the workflow on a live worker, a worker whose tool went silent is reported blocked 10 s after its last heartbeat', async () => {
  const ws = tempWorkspace();
  const scenario = path.join(ws, 'worker.yaml');
  writeFileSync(scenario, YAML.stringify({ turns: [{ reply: { toolCalls: [{ name: 'shell', args: { command: 'sleep 120' } }] } }] }));
  const plan = compile(`name: team-silent-tool\nteam: {}\nsteps:\n  - { id: w, agent: { prompt: go, model: "scripted:${scenario}", tools: [shell] } }\n`, ws);
  const taskQueue = uniqueId('team-silent-tool');
  const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
  // Workflows on one worker, activities (the tool) on another, as deployments often split them.
  const tools = await startWorkerProcess(taskQueue, { CADRE_TEST_ACTIVITIES_ONLY: '1' });
  const flows = await startWorker(taskQueue, { overrides: { enableNonLocalActivities: false } });
  const running = flows.worker.run();
  const { workflowId } = await client.start(plan, {}, { workflowId: uniqueId('team-silent-tool'), taskQueue });
  const agent = client.client.workflow.getHandle(`${workflowId}/w`);
  try {
    await until('the agent running shell', async () => (await agent.query(agentDiagnosticsQuery).catch(() => undefined))?.running.includes('shell') || undefined, 20_000, 250);
    await new Promise((r) => setTimeout(r, 3000));
    expect((await agent.query(agentDiagnosticsQuery)).state).toBe('running');
    await kill(tools, 'SIGKILL');
    const killedAt = Date.now();
    await until('the worker reported blocked', async () => (await client.diagnostics(workflowId)).workers?.[0]?.state === 'blocked' || undefined, 30_000, 250);
    const reportedAfterMs = Date.now() - killedAt;
    process.stdout.write(`team-stuck (live workflow worker): reported blocked ${reportedAfterMs} ms after the tool's worker was killed\n`);
    expect((await agent.describe()).searchAttributes.CadreWorkerState).toEqual(['blocked']);
    // Its last heartbeat came up to 2 s before the kill; the report 10 s after it, give or take a check.
    expect(reportedAfterMs).toBeLessThan(12_000);
  } finally {
    await client.client.workflow.getHandle(workflowId).cancel().catch(() => undefined);
    await kill(tools, 'SIGKILL');
    flows.worker.shutdown();
    await running.catch(() => undefined);
    await flows.connection.close();
    await client.close();
  }
}, 90_000);
