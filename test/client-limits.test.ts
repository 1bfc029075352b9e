import { WorkflowNotFoundError } from '@temporalio/client';
import { CadreClient, CadreError } from '../src/client/client';
import { planDetails } from '../src/client/plan-details';
import { DETAILS_LIMIT_BYTES } from '../src/plan-format/limits';
import type { CompiledPlan, CompiledStep } from '../src/plan-format/types';
import { FRAME_SLACK } from '../src/protocol/details';

const toolStep = (id: string, extra: Partial<CompiledStep> = {}): CompiledStep => ({
  id,
  needs: [],
  as: 'item',
  retry: {},
  onFailure: 'abort',
  onTimeout: 'abort',
  action: { kind: 'tool', tool: 'shell', with: { command: 'true' } },
  ...extra,
});

describe('what the client sends Temporal', () => {
  test('the Web UI details are a bounded summary: long texts shortened with …, long plans cut', () => {
    const plan: CompiledPlan = {
      name: 'big',
      workspace: `/work/${'w'.repeat(500)}`,
      inputs: {},
      steps: [
        { ...toolStep('ask'), action: { kind: 'ask', ask: { question: `Archive?\n${'q'.repeat(3 * 1024 * 1024)}` } } },
        toolStep('cond', { when: `inputs.x == "${'y'.repeat(5000)}"`, needs: Array.from({ length: 50 }, (_, i) => `s${i}`) }),
        ...Array.from({ length: 5000 }, (_, i) => toolStep(`s${i}`)),
      ],
    };
    const inputs = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`in${i}`, 'v'.repeat(10_000)]));
    const details = planDetails(plan, inputs);
    expect(Buffer.byteLength(details)).toBeLessThanOrEqual(8 * 1024);
    expect(Buffer.byteLength(details)).toBeLessThan(DETAILS_LIMIT_BYTES);
    const lines = details.split('\n');
    expect(lines[0]).toMatch(/^\*\*plan big\*\* in `\/work\/w+… \(506 characters\)`$/);
    expect(lines).toContain('- … and 10 more inputs');
    expect(lines.find((l) => l.startsWith('- `ask`'))).toMatch(/^- `ask`: ask "Archive\? q+… \(3,145,737 characters\)"$/);
    expect(lines.find((l) => l.startsWith('- `cond`'))).toMatch(/after s0, s1, s2, s3, s4 and 45 more; when inputs\.x == "y+…/);
    // The last line is the blank paragraph the Web UI's frame may cut (FRAME_SLACK); the list ends before it.
    expect(lines.slice(-2)).toEqual(['', FRAME_SLACK]);
    expect(lines[lines.length - 3]).toMatch(/^- … and \d,\d{3} more steps \(the run's input holds the whole plan\)$/);
  });

  test('start refuses a plan and inputs too big for Temporal before contacting it, naming the input', async () => {
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS, namespace: process.env.CADRE_TEST_NAMESPACE });
    try {
      const plan: CompiledPlan = { name: 'too-big', workspace: '/tmp', inputs: { data: { type: 'json' } }, steps: [toolStep('a')] };
      const workflowId = `too-big-${process.pid}-${Date.now()}`;
      const start = client.start(plan, { data: JSON.stringify({ blob: 'x'.repeat(3 * 1024 * 1024) }) }, { workflowId });
      await expect(start).rejects.toThrow(CadreError);
      await expect(start).rejects.toThrow(
        /^cannot start plan "too-big": the plan and its inputs come to 3\.0 MiB as JSON; Temporal takes at most 2\.0 MiB to start a run \(biggest: input "data"\.blob: 3\.0 MiB\)/,
      );
      await expect(client.client.workflow.getHandle(workflowId).describe()).rejects.toThrow(WorkflowNotFoundError);
    } finally {
      await client.close();
    }
  });
});
