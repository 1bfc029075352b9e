/**
 * A run whose workflow task keeps failing (a worker with other or broken workflow code) cannot
 * answer queries: the server says FAILED_PRECONDITION. cadre says what is wrong in one line.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { CadreClient } from '../src/client/client';
import { runCadre } from './support/cli';
import { compile, tempWorkspace, uniqueId } from './support/harness';

describe('a run whose workflow task keeps failing', () => {
  test('status says so in one line, with the failure, and exits 1', async () => {
    const ws = tempWorkspace();
    const plan = compile(`name: stuck\nsteps:\n  - { id: a, tool: shell, with: { command: "true" } }\n`, ws);
    const taskQueue = uniqueId('stuck');
    const connection = await NativeConnection.connect({ address: process.env.CADRE_TEST_ADDRESS });
    const worker = await Worker.create({ connection, workflowsPath: require.resolve('./support/broken-workflows'), taskQueue, namespace: 'default' });
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
    try {
      const { workflowId } = await client.start(plan, {}, { workflowId: uniqueId('stuck'), taskQueue });
      await worker.runUntil(async () => {
        // Until the first failure is recorded, the query is simply not answered yet.
        for (let i = 0; i < 100; i++) {
          const events = (await client.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
          if (events.some((e) => e.workflowTaskFailedEventAttributes)) break;
          await new Promise((r) => setTimeout(r, 100));
        }
        await expect(client.diagnostics(workflowId)).rejects.toThrow(
          new RegExp(`^run ${workflowId} cannot answer: its workflow task has failed \\d+ times?: broken on purpose\\. A worker runs workflow code`),
        );
        const cli = await runCadre(['status', workflowId], ws, { ...process.env, TEMPORAL_ADDRESS: process.env.CADRE_TEST_ADDRESS });
        expect(cli.code).toBe(1);
        expect(cli.stderr.trim().split('\n')).toHaveLength(1);
        expect(cli.stderr).toContain('cannot answer: its workflow task has failed');
        expect(cli.stderr).not.toContain('FAILED_PRECONDITION');
      });
      await client.client.workflow.getHandle(workflowId).terminate('test over');
    } finally {
      await client.close();
      await connection.close();
    }
  });
});
