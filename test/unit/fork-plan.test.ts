/** planFork (activities/fork.ts) on its own: what a fork restores of the worktrees its restored steps worked in. */
import YAML from 'yaml';
import { planFork } from '../../src/activities/fork';
import { validatePlan } from '../../src/plan-format/validate';
import type { CompiledPlan } from '../../src/plan-format/types';
import type { StepRecord } from '../../src/protocol/definitions';
import type { ForkSource } from '../../src/protocol/forks';

const PLAN = `
name: trees
steps:
  - { id: a, worktree: { repo: /repo, task: t }, tool: shell, with: { command: "echo a" } }
  - { id: b, dependsOn: [a], worktree: { repo: /repo, task: t }, tool: shell, with: { command: "echo b" } }
  - { id: c, worktree: { repo: /repo, task: u }, tool: shell, with: { command: "echo c" } }
  - { id: d, dependsOn: [b, c], worktree: { repo: /repo, task: t }, tool: shell, with: { command: "echo d" } }
`;

function compiled(plan = PLAN): CompiledPlan {
  const result = validatePlan(YAML.parse(plan), { baseDir: '/ws' });
  if (!result.ok) throw new Error(JSON.stringify(result.issues));
  return result.plan;
}

const snap = (n: number) => ({ snapshot: String(n).repeat(40), baseCommit: 'f'.repeat(40) });

function source(records: Partial<Record<string, Partial<StepRecord>>>): ForkSource {
  return {
    status: 'completed',
    plan: compiled() as unknown as ForkSource['plan'],
    inputs: {},
    records: Object.entries(records).map(([id, r]) => ({ id, status: 'completed', attempts: 1, ...r }) as StepRecord),
    outputs: {},
  };
}

describe('planFork: worktrees', () => {
  test('each task restored steps worked in starts the fork from the snapshot of the last of them to end', () => {
    const planned = planFork(
      source({
        a: { endedAt: '2026-11-29T10:00:01.000Z', worktree: snap(1) },
        b: { endedAt: '2026-11-29T10:00:03.000Z', worktree: snap(3) },
        c: { endedAt: '2026-11-29T10:00:02.000Z', worktree: snap(2) },
        d: { endedAt: '2026-11-29T10:00:04.000Z', worktree: snap(4) },
      }),
      { fork: { from: 'old', step: 'd' } },
    );
    expect(planned).toMatchObject({ ok: true, rerun: ['d'] });
    if (!planned.ok) return;
    expect(planned.start.forked?.worktrees).toEqual([
      { repo: '/repo', task: 't', ...snap(3) },
      { repo: '/repo', task: 'u', ...snap(2) },
    ]);
  });

  test('a step run again in a task whose restored steps kept no snapshot is refused; a task no step runs again in is not', () => {
    const old = { a: { endedAt: '2026-11-29T10:00:01.000Z' }, b: { endedAt: '2026-11-29T10:00:03.000Z', worktree: snap(3) }, c: { endedAt: '2026-11-29T10:00:02.000Z' }, d: {} };
    const refused = planFork(source(old), { fork: { from: 'old', step: 'd' } });
    expect(refused).toMatchObject({ ok: false });
    if (refused.ok) return;
    expect(refused.issues).toEqual([{ path: 'steps[3].worktree', message: expect.stringContaining('step "d" runs again in worktree task "t", which restored steps worked in, and the run they ran in kept no snapshot of it') }]);
    const fromB = planFork(source(old), { fork: { from: 'old', step: 'b' } });
    expect(fromB).toMatchObject({ ok: false });
    const fromC = planFork(source({ ...old, a: { ...old.a, worktree: snap(1) } }), { fork: { from: 'old', step: 'c' } });
    expect(fromC).toMatchObject({ ok: true, rerun: ['c', 'd'] });
    if (fromC.ok) expect(fromC.start.forked?.worktrees).toEqual([{ repo: '/repo', task: 't', ...snap(3) }]);
  });
});

describe('planFork: one item of a forEach', () => {
  const LOOP = `
name: loop
steps:
  - { id: list, echo: [a, b, c] }
  - { id: each, forEach: "{{ steps.list.output }}", echo: "{{ item }}" }
`;
  const old = (outputs: unknown): ForkSource => ({
    status: 'completed',
    plan: compiled(LOOP) as unknown as ForkSource['plan'],
    inputs: {},
    records: [
      { id: 'list', status: 'completed', attempts: 1 },
      { id: 'each', status: 'completed', attempts: 3 },
    ],
    outputs: { list: ['a', 'b', 'c'], each: outputs },
  });

  test('the other items are restored with their old outputs, and the step says so', () => {
    const planned = planFork(old(['a', 'b', 'c']), { fork: { from: 'r', step: 'each[1]' } });
    expect(planned).toMatchObject({ ok: true, rerun: ['each'] });
    if (!planned.ok) return;
    expect(planned.start.forked).toMatchObject({ step: 'each[1]', items: { each: { rerun: 1, outputs: ['a', 'b', 'c'] } }, reasons: { each: 'ran again for item 1 only: its other 2 items restored from r' } });
  });

  test('refused when the forEach runs again whole, or keeps its outputs by reference', () => {
    const whole = planFork(old(['a', 'b', 'c']), { fork: { from: 'r', step: 'each[1]', set: { list: ['x'] } } });
    expect(whole).toMatchObject({ ok: false, issues: [{ path: 'fork.step', message: 'step "each" runs again whole in the fork (it reads what the fork changes): fork from the whole step' }] });
    const stored = planFork(old({ $stored: 'blob' }), { fork: { from: 'r', step: 'each[0]' } });
    expect(stored).toMatchObject({ ok: false, issues: [{ path: 'fork.step', message: expect.stringContaining('stored by reference') }] });
  });
});
