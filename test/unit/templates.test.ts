import { evaluateCondition, namesIn } from '../../src/plan-format/expressions';
import { durationMs, isDuration } from '../../src/plan-format/duration';
import { resolveInputs } from '../../src/plan-format/inputs';
import { parsePath, resolveTemplates } from '../../src/plan-format/templates';
import type { CompiledPlan } from '../../src/plan-format/types';

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
    expect(resolveTemplates('{{ steps.search.output.json["odd-key"] }}', scope)).toBe('k');
    expect(resolveTemplates('{{ steps.enrich.output[1].json.from }}', scope)).toBe('b@x');
  });

  test('templates inside text render values as text and objects as JSON', () => {
    expect(resolveTemplates('count={{ steps.search.output.json.count }} first={{ steps.search.output.json.emails[0] }}', scope)).toBe(
      'count=2 first={"from":"a@x"}',
    );
    expect(resolveTemplates({ list: ['{{ inputs.vip }}', 1], flag: true }, scope)).toEqual({ list: ['a@x', 1], flag: true });
  });

  test('a value that is not there fails with the path that was missing, unless the template gives a default', () => {
    const skipped = { ...scope, steps: { ...scope.steps, alert: { output: undefined, status: 'skipped' } } };
    expect(() => resolveTemplates('{{ steps.enrich.output[*].json.tags[0] }}', scope)).toThrow(
      '{{ steps.enrich.output[*].json.tags[0] }} reads nothing: steps.enrich.output[1].json.tags has no [0] (it has 0 items)',
    );
    expect(() => resolveTemplates('echo {{ steps.search.output.json.nope }}', scope)).toThrow('steps.search.output.json has no .nope;');
    expect(() => resolveTemplates('{{ steps.alert.output.json }}', skipped)).toThrow(
      'steps.alert.output is empty, so it has no .json (step "alert" is skipped)',
    );
    expect(() => resolveTemplates('{{ steps.search.output.json.count.x }}', scope)).toThrow('steps.search.output.json.count is a number, so it has no .x');
    expect(resolveTemplates('{{ steps.alert.output.json | default("none") }}', skipped)).toBe('none');
    expect(resolveTemplates("n={{ steps.alert.output.json.n | default(0) }}, tag={{ steps.search.output.json.tag | default('-') }}", skipped)).toBe('n=0, tag=-');
    expect(resolveTemplates('{{ steps.search.output.json.count | default(7) }}', scope)).toBe(2);
    expect(resolveTemplates('{{ steps.enrich.output[*].json.tags[0] | default([]) }}', scope)).toEqual([]);
    const cut = { steps: { big: { output: { stdout: '{"a": 1', truncated: true }, status: 'completed' } } };
    expect(() => resolveTemplates('{{ steps.big.output.json.a }}', cut)).toThrow('steps.big.output has no .json (the output was cut short');
  });

  test('runs recorded before strict templates replay with missing values read as nothing', () => {
    expect(resolveTemplates('{{ steps.enrich.output[*].json.tags[0] }}', scope, { strict: false })).toEqual(['vip', undefined]);
    expect(resolveTemplates('missing=[{{ steps.nope.output }}]', scope, { strict: false })).toBe('missing=[]');
  });

  test('bad paths are reported', () => {
    expect(() => parsePath('steps.a | upper')).toThrow('the only filter is | default(<value>)');
    expect(() => parsePath('steps.a | default(nope)')).toThrow("default(...) takes a JSON value or a 'quoted string'");
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
