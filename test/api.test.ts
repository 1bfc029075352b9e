import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { CadreClient, loadPlan } from '../src';
import { tempWorkspace, withWorker } from './support/harness';

describe('the public API, as the README uses it', () => {
  test('load a plan, start it, answer what it asks, read the result', async () => {
    const ws = tempWorkspace();
    const file = path.join(ws, 'plan.yaml');
    writeFileSync(
      file,
      'name: api\ninputs: { vip: { type: string } }\nsteps:\n  - { id: confirm, ask: { question: "Mail {{ inputs.vip }}?", choices: [yes, no] } }\noutput: "{{ steps.confirm.output }}"\n',
    );
    await withWorker(async ({ taskQueue }) => {
      process.env.TEMPORAL_ADDRESS = process.env.CADRE_TEST_ADDRESS;
      process.env.CADRE_TASK_QUEUE = taskQueue;
      try {
        const client = await CadreClient.connect();
        const plan = await loadPlan(file, process.cwd());
        const { workflowId } = await client.start(plan, { vip: 'me@example.com' });
        let d = await client.diagnostics(workflowId);
        while (d.waiting.length === 0) d = await client.diagnostics(workflowId);
        expect(d.waiting[0]).toMatchObject({ id: 'confirm', prompt: 'Mail me@example.com?' });
        await client.answer(workflowId, d.waiting[0].id, 'yes');
        const final = await client.result(workflowId);
        expect(final).toMatchObject({ status: 'completed', output: 'yes' });
        await client.close();
      } finally {
        delete process.env.TEMPORAL_ADDRESS;
        delete process.env.CADRE_TASK_QUEUE;
      }
    });
  });
});
