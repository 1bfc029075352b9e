import { evaluateCondition, namesIn } from '../src/spec/expressions';
import { durationMs, isDuration } from '../src/spec/duration';
import { resolveInputs } from '../src/spec/inputs';
import { parsePath, resolveTemplates } from '../src/spec/templates';
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
});
