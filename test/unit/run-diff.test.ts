/** `cadre diff`: where two runs' steps differ, and how it reads. */
import { diffSources, jsonDiff, renderDiff } from '../../src/client/diff';
import type { StepRecord } from '../../src/protocol/definitions';
import type { ForkSource } from '../../src/protocol/forks';

const source = (records: StepRecord[], outputs: Record<string, unknown>): ForkSource => ({
  status: 'completed',
  plan: { name: 'p', workspace: '/w', steps: records.map((r) => ({ id: r.id, needs: [] })) },
  inputs: {},
  records,
  outputs,
});
const done = (id: string, more: Partial<StepRecord> = {}): StepRecord => ({ id, status: 'completed', attempts: 1, durationMs: 100, ...more });

test('a JSON diff names each path that differs, and which side lacks it', () => {
  expect(jsonDiff({ a: 1, b: [1, 2], c: { d: 'x' } }, { a: 1, b: [1, 3, 4], c: { e: 'y' } })).toEqual([
    { path: '$.b[1]', a: 2, b: 3 },
    { path: '$.b[2]', b: 4 },
    { path: '$.c.d', a: 'x' },
    { path: '$.c.e', b: 'y' },
  ]);
  expect(jsonDiff('short', 'long')).toEqual([{ path: '$', a: 'short', b: 'long' }]);
  expect(jsonDiff({ same: [1, { x: null }] }, { same: [1, { x: null }] })).toEqual([]);
  // A stored output is compared by its reference.
  expect(jsonDiff({ $stored: 'sha256:aa', bytes: 9 }, { $stored: 'sha256:bb', bytes: 9 })).toEqual([{ path: '$.$stored', a: 'sha256:aa', b: 'sha256:bb' }]);
});

test('only the steps that differ are listed: status, output, attempts, tokens, time; a step of one plan only says so', () => {
  const agent = (tokens: number) => ({ agent: { workflowId: 'x/a', turns: 1, usage: { inputTokens: tokens, outputTokens: 1 } } });
  const a = source([done('same'), done('draft', agent(10)), done('decide'), done('gone')], { same: 1, draft: 'cats', decide: 'short' });
  const b = source([done('same'), done('draft', agent(10)), done('decide', { attempts: 2, durationMs: 300, status: 'failed', ...agent(5) })], { same: 1, draft: 'dogs' });
  const { steps, differ } = diffSources(a, b);
  expect(steps).toBe(4);
  expect(differ).toEqual([
    { step: 'draft', output: [{ path: '$', a: 'cats', b: 'dogs' }] },
    { step: 'decide', status: ['completed', 'failed'], output: [{ path: '$', a: 'short' }], attempts: [1, 2], tokens: [0, 6], durationMs: [100, 300] },
    { step: 'gone', only: 'a' },
  ]);
  expect(renderDiff({ a: 'r1', b: 'r2', steps, differ })).toBe(
    [
      'r1 → r2: 3 of 4 steps differ',
      '  draft: output $: "cats" → "dogs"',
      '  decide: status "completed" → "failed"; output $: "short" → (none); attempts 1 → 2; tokens 0 → 6; time 100ms → 300ms',
      "  gone: only in the first run's plan",
    ].join('\n'),
  );
  expect(renderDiff({ a: 'r1', b: 'r1', steps: 4, differ: [] })).toBe('r1 → r1: no step differs');
});

test('a step with many output changes shows twenty and counts the rest; the JSON has them all', () => {
  const many = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`k${i}`, i]));
  const { differ } = diffSources(source([done('s')], { s: many }), source([done('s')], { s: {} }));
  expect(differ[0].output).toHaveLength(25);
  expect(renderDiff({ a: 'a', b: 'b', steps: 1, differ })).toContain('and 5 more output changes (--json lists them all)');
});
