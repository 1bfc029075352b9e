/**
 * The demo's example (examples/email-triage) on the dev server, answered as `npm run demo`
 * answers it: tools, a fan-out, an ask, a retried failure, an LLM decision and an agent whose
 * file write waits for approval, all offline on scripted models.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { DEMO_DIR, TEAM_DEMO_DIR } from '../src/client/demo';
import { loadPlan } from '../src/plan-format/load';
import { startPlan, step, tempWorkspace, waitUntil, fileWorker } from './support/harness';

// One worker for the file's runs, each its own plan and workflow id (harness.ts, fileWorker).
const withFileWorker = fileWorker('tq-example');

test('the email-triage example completes offline, its decide and agent steps included', async () => {
  const ws = tempWorkspace();
  cpSync(DEMO_DIR, ws, { recursive: true });
  const plan = await loadPlan(path.join(ws, 'plan.yaml'), ws);
  await withFileWorker(async (h) => {
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

test('the feature-team example: architect plans, two workers in parallel worktrees, a question the architect answers, a review, both merged', async () => {
  const ws = tempWorkspace();
  cpSync(TEAM_DEMO_DIR, ws, { recursive: true });
  const plan = await loadPlan(path.join(ws, 'plan.yaml'), ws);
  await withFileWorker(async (h) => {
    const id = await startPlan(h, plan);
    const statuses = new Set<string>();
    await waitUntil(h, id, (d) => (statuses.add(d.status), !['running', 'waiting'].includes(d.status)));
    const d = await h.client.result(id);
    expect(d.status).toBe('completed');
    expect(statuses).not.toContain('waiting'); // the architect answered: no person was asked
    expect(d.workers?.map((w) => [w.step, w.role, w.state]).sort()).toEqual([
      ['consult-1', 'architect', 'completed'],
      ['implement', 'implementer', 'completed'],
      ['plan', 'architect', 'completed'],
      ['review', 'reviewer', 'completed'],
      ['test', 'tester', 'completed'],
    ]);
    expect(d.consultations).toEqual([expect.objectContaining({ from: 'implement', to: 'architect', outcome: 'answered', confidence: 0.9 })]);
    // implement and test ran at the same time
    const [impl, tests] = [step(d, 'implement'), step(d, 'test')];
    expect(Date.parse(impl.startedAt as string)).toBeLessThan(Date.parse(tests.endedAt as string));
    expect(Date.parse(tests.startedAt as string)).toBeLessThan(Date.parse(impl.endedAt as string));
    const repo = path.join(ws, 'repo');
    expect(execFileSync('git', ['log', '--format=%s', 'main'], { cwd: repo, encoding: 'utf8' }).trim().split('\n')).toEqual(
      expect.arrayContaining(['fetchJson retries network errors and 5xx, 3 attempts', 'tests for fetchJson retries', 'fetchJson']),
    );
    expect(readFileSync(path.join(repo, 'http.js'), 'utf8')).toContain('const ATTEMPTS = 3;');
    // The implementer's done waited for its verify, run once in its worktree, which passed.
    const events = (await h.client.client.workflow.getHandle(impl.agent?.workflowId as string).fetchHistory()).events ?? [];
    const checks = events.filter((e) => e.activityTaskScheduledEventAttributes?.activityId?.endsWith('/verify.1'));
    expect(checks).toHaveLength(1);
    expect(events.some((e) => e.activityTaskCompletedEventAttributes?.scheduledEventId?.toString() === checks[0].eventId?.toString())).toBe(true);
    expect(existsSync(path.join(repo, 'http.test.js'))).toBe(true);
    expect(d.worktrees?.map((w) => w.state)).toEqual(['removed', 'removed']);
    const report = readFileSync(path.join(ws, 'REPORT.md'), 'utf8');
    expect(report).toContain('- implementer: http.js: fetchJson retries');
    expect(report).toContain('- reviewer: approve: retries are bounded');
  });
});
