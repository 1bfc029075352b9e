import { resolveInputs } from '../../src/plan-format/inputs';
import type { CompiledPlan } from '../../src/plan-format/types';

describe('inputs are parsed strictly', () => {
  test("numbers follow JSON's grammar; booleans are true or false; JSON is plain data of bounded depth", () => {
    const plan = { name: 'p', inputs: { n: { type: 'number' }, on: { type: 'boolean' }, data: { type: 'json' } } } as unknown as CompiledPlan;
    const value = (given: Record<string, unknown>) => {
      const result = resolveInputs(plan, { n: '1', on: 'true', data: '1', ...given });
      return result.ok ? result.values : result.issues.map((i) => i.path);
    };
    for (const n of ['0', '-0.5', '12', '1e3', '2.5E-3']) expect(value({ n })).toEqual({ n: Number(n), on: true, data: 1 });
    for (const n of ['0x10', '0b1', '0o7', '1e999', '-1e999', 'Infinity', 'NaN', ' 12 ', '12 ', '', '+1', '.5', '1.', '01', '1_000']) {
      expect([n, value({ n })]).toEqual([n, ['inputs.n']]);
    }
    for (const n of [Infinity, NaN]) expect(value({ n })).toEqual(['inputs.n']);
    for (const on of ['True', 'yes', '1', ' true', 1]) expect([on, value({ on })]).toEqual([on, ['inputs.on']]);
    expect(value({ on: false })).toEqual({ n: 1, on: false, data: 1 });
    expect(value({ data: '[1e999]' })).toEqual(['inputs.data[0]']);
    expect(value({ data: `${'['.repeat(100_000)}${']'.repeat(100_000)}` })).toEqual(['inputs.data[0][0][0][0]…']);
    expect(value({ data: { at: new Date(0) } })).toEqual(['inputs.data.at']);
    expect(value({ data: { ok: [1, 'two', null, { three: true }] } })).toEqual({ n: 1, on: true, data: { ok: [1, 'two', null, { three: true }] } });
  });
});
