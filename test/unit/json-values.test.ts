import { jsonValueIssues, measureJson } from '../../src/plan-format/json-values';
import { stringsIn } from '../../src/plan-format/templates';

describe('walks over user data', () => {
  test('measureJson gives the UTF-8 size of JSON.stringify, for any plain value', () => {
    const values: unknown[] = [
      null,
      0,
      -1.5e-7,
      true,
      '',
      'é😀\u0000"\\\n',
      [],
      {},
      [1, undefined, 'x'],
      { a: undefined, b: [{}], 'k"ey': { nested: ['v', 2, false, null] } },
      { date: new Date(0), list: Array.from({ length: 50 }, (_, i) => ({ i, s: 'x'.repeat(i) })) },
    ];
    for (const value of values) expect(measureJson(value, '', 1).bytes).toBe(Buffer.byteLength(JSON.stringify(value)));
  });

  test('measureJson names the smallest big parts, and what remains of a node besides them', () => {
    const plan = { steps: [{ with: { command: 'x'.repeat(5000) } }, ...Array.from({ length: 100 }, () => ({ with: { command: 'y'.repeat(50) } }))] };
    const size = measureJson(plan, 'plan', 2000);
    expect(size.parts.map((p) => [p.path, p.rest])).toEqual([
      ['plan.steps', true],
      ['plan.steps[0].with.command', false],
    ]);
    expect(size.parts[1].bytes).toBe(5002);
  });

  test('measureJson walks a value nested 100,000 deep without recursion', () => {
    let deep: unknown = 'leaf';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(measureJson(deep, '', 1 << 30).bytes).toBe(200_006);
  });

  test('stringsIn yields strings in order, and walks values nested 100,000 deep without recursion', () => {
    expect([...stringsIn({ a: ['x', { b: 'y' }], c: 1, d: 'z' }, 'with')]).toEqual([
      { text: 'x', location: 'with.a[0]' },
      { text: 'y', location: 'with.a[1].b' },
      { text: 'z', location: 'with.d' },
    ]);
    let deep: unknown = '{{ inputs.vip }}';
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const found = [...stringsIn(deep, 'output')];
    expect(found).toHaveLength(1);
    expect(found[0].location).toBe(`output${'[0]'.repeat(100_000)}`);
  });

  test('jsonValueIssues: depth, numbers JSON cannot carry, values that are not plain data', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = { k: deep };
    expect(jsonValueIssues(deep, 'with')).toEqual([
      { path: 'with.k.k.k.k…', message: 'nested more than 64 levels deep: flatten it, or keep the data in a file and read it with fs.read' },
    ]);
    let ok: unknown = 1;
    for (let i = 0; i < 64; i++) ok = [ok];
    expect(jsonValueIssues(ok, 'with')).toEqual([]);
    const issues = jsonValueIssues({ a: NaN, b: [Infinity], c: new Map(), d: Buffer.from('x'), e: () => 1, f: 1n, g: undefined }, 'with');
    expect(issues.map((i) => i.path)).toEqual(['with.a', 'with.b[0]', 'with.c', 'with.d', 'with.e', 'with']);
    expect(issues[5].message).toBe('and 1 more such problem in this value');
    expect(jsonValueIssues(Object.create(null), 'x')).toEqual([]);
  });
});
