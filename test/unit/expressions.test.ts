import { evaluateCondition, namesIn, withQuotedStepIds } from '../../src/plan-format/expressions';

const scope = { steps: { search: { output: { json: { count: 2 } }, status: 'completed' } }, inputs: { vip: 'a@x' } };

describe('when expressions: what cadre allows', () => {
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

describe('step ids with hyphens in when expressions', () => {
  const hyphenScope = { steps: { 'fetch-data': { output: { n: 2 }, status: 'completed' }, a: { output: 5 } } };

  test('steps.fetch-data reads the step, not a subtraction; strings and other roots are left alone', () => {
    expect(withQuotedStepIds('steps.fetch-data.output.n > 1')).toBe('steps["fetch-data"].output.n > 1');
    expect(withQuotedStepIds('steps.a-b.output == "steps.c-d" && steps.e_f-g2')).toBe('steps["a-b"].output == "steps.c-d" && steps["e_f-g2"]');
    expect(withQuotedStepIds("x.steps.a-b == 'steps.x-y'")).toBe("x.steps.a-b == 'steps.x-y'");
    expect(namesIn('steps.fetch-data.output.n > 1 || steps.fetch-data')).toEqual([
      ['steps', 'fetch-data', 'output', 'n'],
      ['steps', 'fetch-data'],
    ]);
    expect(evaluateCondition('steps.fetch-data.output.n > 1', hyphenScope)).toBe(true);
    expect(evaluateCondition('steps.fetch-data.status == "completed"', hyphenScope)).toBe(true);
  });

  test('after the id, a hyphen is a minus; spaces make one anywhere', () => {
    expect(namesIn('steps.a.output-1 > 3')).toEqual([['steps', 'a', 'output']]);
    expect(evaluateCondition('steps.a.output-1 > 3', hyphenScope)).toBe(true);
    expect(namesIn('steps.a - b')).toEqual([['steps', 'a'], ['b']]);
  });

  test('an expression without a hyphenated id is handed to Jexl as it is written', () => {
    for (const expression of ['steps.a.output - 1 > 0', 'inputs.n-1', '"a-b" == steps.a.output']) expect(withQuotedStepIds(expression)).toBe(expression);
  });
});
