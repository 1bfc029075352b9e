import { evaluateCondition, namesIn } from '../src/spec/expressions';
import { durationMs, isDuration } from '../src/spec/duration';
import { resolveInputs } from '../src/spec/inputs';
import { parsePath, resolveTemplates, stringsIn } from '../src/spec/templates';
import type { CompiledPlan } from '../src/spec/types';

const scope = {
  steps: {
    search: { output: { json: { emails: [{ from: 'a@x' }, { from: 'b@x' }], count: 2, 'odd-key': 'k' } }, status: 'completed' },
    enrich: { output: [{ json: { from: 'a@x', tags: ['vip'] } }, { json: { from: 'b@x', tags: [] } }], status: 'completed' },
  },
  inputs: { vip: 'a@x' },
};

describe('templates', () => {
  test('a whole-string template keeps the type; [*] maps over lists', () => {
    expect(resolveTemplates('{{ steps.search.output.json.emails }}', scope)).toEqual([{ from: 'a@x' }, { from: 'b@x' }]);
    expect(resolveTemplates('{{steps.search.output.json.count}}', scope)).toBe(2);
    expect(resolveTemplates('{{ steps.enrich.output[*].json.from }}', scope)).toEqual(['a@x', 'b@x']);
    expect(resolveTemplates('{{ steps.enrich.output[*].json.tags[0] }}', scope)).toEqual(['vip', undefined]);
    expect(resolveTemplates('{{ steps.search.output.json["odd-key"] }}', scope)).toBe('k');
    expect(resolveTemplates('{{ steps.enrich.output[1].json.from }}', scope)).toBe('b@x');
  });

  test('templates inside text render values as text and objects as JSON', () => {
    expect(resolveTemplates('count={{ steps.search.output.json.count }} first={{ steps.search.output.json.emails[0] }}', scope)).toBe(
      'count=2 first={"from":"a@x"}',
    );
    expect(resolveTemplates('missing=[{{ steps.nope.output }}]', scope)).toBe('missing=[]');
    expect(resolveTemplates({ list: ['{{ inputs.vip }}', 1], flag: true }, scope)).toEqual({ list: ['a@x', 1], flag: true });
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

  test('bad paths are reported', () => {
    expect(() => parsePath(' steps.a..b ')).toThrow('cannot read "..b"');
    expect(() => parsePath('1abc')).toThrow('expected a name');
  });
});

describe('when expressions', () => {
  test('evaluate against the scope without eval', () => {
    expect(evaluateCondition('steps.search.output.json.count == 2 && inputs.vip == "a@x"', scope)).toBe(true);
    expect(evaluateCondition('steps.search.output.json.urgent == true', scope)).toBe(false);
    expect(evaluateCondition('"a@x" in steps.enrich.output[0].json.from', scope)).toBe(true);
  });

  test('names read by an expression are found for dependencies', () => {
    expect(namesIn('steps.a.output.x > 2 || steps.b.status == "skipped" && !inputs.flag')).toEqual([
      ['steps', 'a', 'output', 'x'],
      ['steps', 'b', 'status'],
      ['inputs', 'flag'],
    ]);
  });

  test('transforms and functions are refused: cadre registers none', () => {
    expect(() => namesIn('steps.a.output | upper')).toThrow('unknown transform "| upper": cadre registers no Jexl transforms');
    expect(() => namesIn('steps.a.output | pick("x") == 1')).toThrow('unknown transform "| pick"');
    expect(() => namesIn('1 == 1 && now() > 0')).toThrow('unknown function "now()": cadre registers no Jexl functions');
    expect(() => evaluateCondition('inputs.vip | lower == "a@x"', scope)).toThrow('unknown transform "| lower"');
  });

  test('expressions Jexl parses with a hole (which would throw when evaluated) are refused', () => {
    for (const expression of ['{a: } == 1', 'inputs.vip[] == 1', 'inputs.vip ? : 1']) {
      expect(() => namesIn(expression)).toThrow(`bad expression "${expression}": a value is missing`);
    }
  });

  test('expressions are bounded in length and depth before Jexl parses or evaluates them', () => {
    const terms = (n: number) => Array(n).fill('steps.search.status == "completed"').join(' && ');
    expect(() => namesIn(terms(5000))).toThrow(/expression is 189,996 characters long; cadre allows 1,000/);
    expect(() => namesIn('!'.repeat(64) + 'inputs.vip')).toThrow('expression nests more than 64 levels deep');
    expect(() => namesIn('['.repeat(300) + ']'.repeat(300))).toThrow('expression nests more than 64 levels deep');
    expect(() => namesIn(`inputs.vip${'.x'.repeat(64)}`)).toThrow('expression nests more than 64 levels deep');
    expect(() => namesIn('   ')).toThrow('empty expression');
  });

  test('every expression that passes the checks evaluates without overflowing the stack, even deep in a call stack', () => {
    const atTheLimit = [
      `${'('.repeat(495)}inputs.vip${')'.repeat(495)}`,
      Array(62).fill('inputs.vip').join('&&'),
      `${'!'.repeat(62)}inputs.vip`,
      `inputs${'.x'.repeat(62)}`,
      `${Array(30).fill('inputs.vip ? 1 :').join(' ')} 2`,
      `${'['.repeat(63)}1${']'.repeat(63)}`,
    ];
    const deep = (n: number, fn: () => unknown): unknown => (n === 0 ? fn() : deep(n - 1, fn));
    for (const expression of atTheLimit) {
      expect(expression.length).toBeLessThanOrEqual(1000);
      expect(() => namesIn(expression)).not.toThrow();
      expect(typeof deep(2000, () => evaluateCondition(expression, scope))).toBe('boolean');
    }
  });
});

describe('durations and inputs', () => {
  test('durations need a unit', () => {
    expect(durationMs('200ms')).toBe(200);
    expect(durationMs('1.5s')).toBe(1500);
    expect(durationMs('2d')).toBe(172_800_000);
    expect(isDuration('10')).toBe(false);
    expect(isDuration('5 minutes')).toBe(false);
  });

  test('inputs are typed, defaulted, and unknown ones refused', () => {
    const plan = { name: 'p', inputs: { n: { type: 'number' }, on: { type: 'boolean', default: false }, data: { type: 'json' } } } as unknown as CompiledPlan;
    expect(resolveInputs(plan, { n: '3', data: '{"a":1}' })).toEqual({ ok: true, values: { n: 3, on: false, data: { a: 1 } } });
    expect(resolveInputs(plan, { n: 'x', data: '{', extra: '1' })).toEqual({
      ok: false,
      issues: [
        { path: 'inputs.extra', message: 'plan "p" has no input "extra"' },
        { path: 'inputs.n', message: 'expected a number, got "x"' },
        { path: 'inputs.data', message: 'expected JSON, got "{"' },
      ],
    });
  });

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
