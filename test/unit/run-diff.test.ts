/** `cadre diff`: where two runs' steps differ, and how it reads. */
import { diffSources, jsonDiff, renderDiff } from '../../src/client/diff';
import { costOf } from '../../src/providers/prices';
import type { StepRecord } from '../../src/protocol/definitions';
import type { ForkSource } from '../../src/protocol/forks';

/** Steps with an agent are agent steps on openai:mini; the rest run a tool. */
const source = (records: StepRecord[], outputs: Record<string, unknown>): ForkSource => ({
  status: 'completed',
  plan: { name: 'p', workspace: '/w', steps: records.map((r) => ({ id: r.id, needs: [], action: r.agent ? { kind: 'agent', agent: { model: 'openai:mini' } } : { kind: 'tool', tool: 'shell' } })) },
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
  const { steps, differ, spent } = diffSources(a, b);
  expect(steps).toBe(4);
  expect(differ).toEqual([
    { step: 'draft', output: [{ path: '$', a: 'cats', b: 'dogs' }] },
    { step: 'decide', status: ['completed', 'failed'], output: [{ path: '$', a: 'short' }], attempts: [1, 2], tokens: [0, 6], durationMs: [100, 300] },
    { step: 'gone', only: 'a' },
  ]);
  expect(renderDiff({ a: 'r1', b: 'r2', steps, differ, spent })).toBe(
    [
      'r1 → r2: 3 of 4 steps differ',
      '  draft: output $: "cats" → "dogs"',
      '  decide: status "completed" → "failed"; output $: "short" → (none); attempts 1 → 2; tokens 0 → 6; time 100ms → 300ms',
      "  gone: only in the first run's plan",
      '  spent: 11 tokens → 17 tokens',
    ].join('\n'),
  );
  expect(renderDiff({ a: 'r1', b: 'r1', steps: 4, differ: [], spent: { a: spent.a, b: spent.a } })).toBe('r1 → r1: no step differs\n  spent: 11 tokens → 11 tokens');
});

test('a step with many output changes shows twenty and counts the rest; the JSON has them all', () => {
  const many = Object.fromEntries(Array.from({ length: 25 }, (_, i) => [`k${i}`, i]));
  const { differ, spent } = diffSources(source([done('s')], { s: many }), source([done('s')], { s: {} }));
  expect(differ[0].output).toHaveLength(25);
  expect(renderDiff({ a: 'a', b: 'b', steps: 1, differ, spent })).toContain('and 5 more output changes (--json lists them all)');
});

test('prices: USD per million tokens, cached input at its own price (or the input price), output apart', () => {
  const usage = { inputTokens: 1_000_000, outputTokens: 200_000, cachedInputTokens: 400_000 };
  expect(costOf(usage, { input: 0.15, output: 0.6, cachedInput: 0.075 })).toBeCloseTo(0.6 * 0.15 + 0.4 * 0.075 + 0.2 * 0.6, 12);
  expect(costOf(usage, { input: 3, output: 15 })).toBeCloseTo(3 + 0.2 * 15, 12);
  expect(costOf({ inputTokens: 10, outputTokens: 0, cachedInputTokens: 50 }, { input: 1, output: 1, cachedInput: 0 })).toBe(0);
});

test('with prices, each step\'s cost and what each run spent itself: a fork\'s restored steps were paid by the run they came from', () => {
  const agent = (input: number, output: number, cached?: number) => ({ agent: { workflowId: 'x/a', turns: 1, usage: { inputTokens: input, outputTokens: output, ...(cached && { cachedInputTokens: cached }) } } });
  const a = source([done('draft', agent(1000, 50, 400)), done('decide', agent(300, 5))], {});
  const b = source([done('draft', { ...agent(1000, 50, 400), note: 'restored from r1' }), done('decide', agent(300, 10))], {});
  const pricing = { prices: { 'openai:mini': { input: 0.15, output: 0.6, cachedInput: 0.075 } } };
  const diff = { a: 'r1', b: 'r2', ...diffSources(a, b, pricing) };
  expect(diff.differ).toEqual([{ step: 'decide', tokens: [305, 310], cost: [48e-6, 51e-6] }]);
  expect(diff.spent).toEqual({ a: { tokens: 1355, cost: 198e-6, unpriced: [] }, b: { tokens: 310, cost: 51e-6, unpriced: [] } });
  expect(renderDiff(diff)).toBe(['r1 → r2: 1 of 2 steps differ', '  decide: tokens 305 → 310; cost $0.000048 → $0.000051', '  spent: 1355 tokens ($0.00020) → 310 tokens ($0.000051)'].join('\n'));
  // A model without a price is said to be, never counted as free.
  const other = diffSources(a, b, { prices: { 'openai:other': { input: 1, output: 1 } } });
  expect(other.spent.a).toEqual({ tokens: 1355, cost: 0, unpriced: ['openai:mini'] });
  expect(renderDiff({ a: 'r1', b: 'r2', ...other })).toContain('spent: 1355 tokens (unpriced) → 310 tokens (unpriced)\n  no price for openai:mini (cadre.config.yaml models.prices): not in the cost');
});
