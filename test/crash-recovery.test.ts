import { readFileSync } from 'node:fs';
import path from 'node:path';
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
});
