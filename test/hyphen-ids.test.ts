/**
 * Step ids with hyphens (`fetch-data`, `security-audit`), as GitHub Actions and Argo write them,
 * run end to end: templates and `when` read `steps.fetch-data`, also when the output is stored
 * outside history (the condition is then evaluated by an activity), in a forEach and an agent step.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { compile, startPlan, step, tempWorkspace, withWorker } from './support/harness';

test('a plan whose step ids hold hyphens runs, with conditions on inline and stored outputs', async () => {
  const ws = tempWorkspace();
  // ~90 KiB of JSON: stored outside history, so `when` on it runs in an activity.
  writeFileSync(path.join(ws, 'gen.js'), `process.stdout.write(JSON.stringify({ items: Array.from({ length: 300 }, (_, i) => ({ name: 'item-' + i, pad: 'x'.repeat(300) })) }))`);
  writeFileSync(path.join(ws, 'agent.yaml'), 'turns:\n  - expect: { lastContains: "3 findings" }\n    reply: { text: "reviewed 3 findings" }\n');
  const plan = compile(
    `
name: hyphen-ids
steps:
  - { id: fetch-data, tool: shell, with: { command: "echo '{\\"n\\": 3, \\"hosts\\": [\\"a\\", \\"b\\"]}'" } }
  - { id: big-list, tool: shell, with: { command: "node gen.js" } }
  - { id: security-audit, when: "steps.fetch-data.output.json.n > 2 && steps.fetch-data.status == 'completed'", tool: shell, with: { command: "echo {{ steps.fetch-data.output.json.n }} findings" } }
  - { id: skipped-audit, when: "steps.fetch-data.output.json.n-3 > 0", tool: shell, with: { command: "echo never" } }
  - { id: stored-check, when: "steps.big-list.output.json.items[299].name == 'item-299'", tool: shell, with: { command: "echo stored" } }
  - { id: per-host, forEach: "{{ steps.fetch-data.output.json.hosts }}", as: host, tool: shell, with: { command: "echo scan {{ host }}" } }
  - { id: review-findings, agent: { prompt: "Review: {{ steps.security-audit.output.stdout }}", model: "scripted:agent.yaml" } }
output:
  audit: "{{ steps.security-audit.output.stdout }}"
  scans: "{{ steps.per-host.output[*].stdout }}"
  review: "{{ steps.review-findings.output }}"
`,
    ws,
  );
  await withWorker(async (h) => {
    const id = await startPlan(h, plan);
    const d = await h.client.result(id);
    expect(d.status).toBe('completed');
    expect(step(d, 'security-audit').status).toBe('completed');
    // After the id, `-3` is a subtraction: 3-3 > 0 is false.
    expect(step(d, 'skipped-audit').status).toBe('skipped');
    expect(step(d, 'stored-check').status).toBe('completed');
    expect(d.output).toEqual({ audit: '3 findings\n', scans: ['scan a\n', 'scan b\n'], review: 'reviewed 3 findings' });
    expect(step(d, 'review-findings').agent?.workflowId).toBe(`${id}/review-findings`);
  });
});
