/**
 * The demo's example (examples/email-triage) on the dev server, answered as `npm run demo`
 * answers it: tools, a fan-out, an ask, a retried failure, an LLM decision and an agent whose
 * file write waits for approval, all offline on scripted models.
 */
import { cpSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DEMO_DIR } from '../src/client/demo';
import { loadPlan } from '../src/spec/load';
import { startPlan, step, tempWorkspace, waitUntil, withWorker } from './support/harness';

test('the email-triage example completes offline, its decide and agent steps included', async () => {
  const ws = tempWorkspace();
  cpSync(DEMO_DIR, ws, { recursive: true });
  const plan = await loadPlan(path.join(ws, 'plan.yaml'), ws);
  await withWorker(async (h) => {
    const id = await startPlan(h, plan);
    const answered = new Set<string>();
    const kinds: string[] = [];
    await waitUntil(h, id, (d) => {
      for (const w of d.waiting) {
        if (answered.has(w.id)) continue;
        answered.add(w.id);
        kinds.push(w.kind);
        void h.client.answer(id, w.id, w.choices?.[0] ?? 'yes');
      }
      return !['running', 'waiting'].includes(d.status);
    });
    const d = await h.client.result(id);
    expect(d.status).toBe('completed');
    expect(kinds.sort()).toEqual(['approval', 'ask']);
    expect(d.output).toMatchObject({ triage: 'urgent', summary: 'Wrote summary.md: 4 emails, one urgent from the CEO.', answer: 'yes' });
    expect(step(d, 'summarise').agent).toMatchObject({ turns: 3, toolCalls: 2, usage: { inputTokens: 720, outputTokens: 96 } });
    expect(readFileSync(path.join(ws, 'summary.md'), 'utf8')).toContain('ceo@example.com: Board meeting moved');
  });
});
