import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { CadreClient } from '../src/client/client';
import { compile, kill, startWorkerProcess, step, tempWorkspace, uniqueId, waitUntil } from './support/harness';

describe('durability', () => {
  test('a worker killed with SIGKILL mid-plan is replaced and the plan finishes without re-running completed steps', async () => {
    const ws = tempWorkspace();
    const steps = ['s1', 's2', 's3', 's4', 's5'];
    const plan = compile(
      `
name: crash
steps:
${steps.map((id, i) => `  - { id: ${id}, ${i > 0 ? `dependsOn: [${steps[i - 1]}], ` : ''}tool: shell, with: { command: "echo ${id} >> runs.log; sleep 0.5" } }`).join('\n')}
`,
      ws,
    );
    const taskQueue = uniqueId('crash');
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
    let worker = await startWorkerProcess(taskQueue);
    try {
      const { workflowId } = await client.start(plan, {}, { workflowId: uniqueId('crash'), taskQueue });
      const h = { client, taskQueue };
      await waitUntil(h, workflowId, (d) => step(d, 's2').status === 'completed' && step(d, 's3').status === 'running');
      await kill(worker, 'SIGKILL');
      worker = await startWorkerProcess(taskQueue);
      const d = await client.result(workflowId);
      expect(d.status).toBe('completed');
      const runs = readFileSync(path.join(ws, 'runs.log'), 'utf8').trim().split('\n');
      const count = (id: string) => runs.filter((r) => r === id).length;
      // Completed before the kill: never again. In flight at the kill: at least once (activities are at-least-once).
      expect([count('s1'), count('s2'), count('s4'), count('s5')]).toEqual([1, 1, 1, 1]);
      expect(count('s3')).toBeGreaterThanOrEqual(1);
      expect(count('s3')).toBeLessThanOrEqual(2);
    } finally {
      await kill(worker, 'SIGTERM');
      await client.close();
    }
  });

  test("an agent whose stored conversation is gone (a new worker, a cleaned store) sends it whole once, and goes on", async () => {
    const ws = tempWorkspace();
    writeFileSync(path.join(ws, 'notes.txt'), 'the notes say forty-two\n');
    // The turn is read from the conversation (scripted.ts): a turn sent only what is new would not match.
    const turns = [{ reply: { toolCalls: [{ name: 'fs_read', args: { path: 'notes.txt' } }] } }, { expect: { lastContains: 'forty-two' }, reply: { text: 'forty-two' } }];
    writeFileSync(path.join(ws, 'reader.yaml'), YAML.stringify({ turns }));
    const plan = compile(`name: chain-lost\nsteps:\n  - id: read\n    agent: { prompt: "read notes.txt", model: "scripted:reader.yaml", tools: [fs.read], approvals: { fs.read: ask } }\noutput: "{{ steps.read.output }}"\n`, ws);
    const taskQueue = uniqueId('chain-lost');
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
    let worker = await startWorkerProcess(taskQueue);
    try {
      const { workflowId } = await client.start(plan, {}, { workflowId: uniqueId('chain-lost'), taskQueue });
      const waiting = await waitUntil({ client, taskQueue }, workflowId, (d) => d.waiting.some((w) => w.kind === 'approval'));
      // The worker that stored the first turn's conversation (and holds it in memory) is gone, and so are the files.
      await kill(worker, 'SIGKILL');
      const blobs = path.join(ws, '.cadre', 'blobs');
      const stored = readdirSync(blobs).filter((f) => f.endsWith('.json'));
      expect(stored.length).toBeGreaterThan(0);
      for (const file of stored) rmSync(path.join(blobs, file));
      worker = await startWorkerProcess(taskQueue);
      await client.approve(workflowId, waiting.waiting.find((w) => w.kind === 'approval')?.id as string);
      const result = await client.result(workflowId);
      expect({ status: result.status, output: result.output }).toEqual({ status: 'completed', output: 'forty-two' });
      // The second turn: sent from the stored conversation, refused for want of it, sent whole.
      const events = (await client.client.workflow.getHandle(`${workflowId}/read`).fetchHistory()).events ?? [];
      const scheduled = new Map(events.flatMap((e) => (e.activityTaskScheduledEventAttributes ? [[String(e.eventId), e.activityTaskScheduledEventAttributes]] as const : [])));
      const turnsRan = events.flatMap((e) => {
        const ended = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes;
        const s = ended && scheduled.get(String(ended.scheduledEventId));
        if (s?.activityType?.name !== 'modelTurnChained') return [];
        const input = JSON.parse(Buffer.from(s.input?.payloads?.[0]?.data ?? []).toString()) as { earlier?: unknown; messages: unknown[] };
        return [[input.earlier ? 'after stored' : 'whole', input.messages.length, e.activityTaskFailedEventAttributes?.failure?.applicationFailureInfo?.type ?? 'ok']];
      });
      expect(turnsRan).toEqual([['whole', 1, 'ok'], ['after stored', 2, 'ConversationMissing'], ['whole', 3, 'ok']]);
    } finally {
      await kill(worker, 'SIGTERM');
      await client.close();
    }
  });
});
