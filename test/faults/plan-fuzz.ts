/**
 * A seeded corpus of malformed and extreme plan files: every case that once crashed, hung or
 * overflowed cadre's validation or a run, and seeded mutations of valid plans. Deterministic
 * (its own PRNG, never Math.random): the same seed gives the same files, byte for byte.
 *
 * `validate-fuzz.test.ts` validates every file; `validatingFuzzPlans()` gives those that
 * validate, for running on a dev server (each must complete or fail with a message).
 */
import YAML from 'yaml';
import { MAX_PLAN_FILE_BYTES, parsePlanText } from '../../src/plan-format/load';
import type { CompiledPlan } from '../../src/plan-format/types';
import { validatePlan } from '../../src/plan-format/validate';
import { type Random, prng } from '../support/random';

export interface FuzzPlan {
  /** File name; the extension says how cadre parses it. */
  file: string;
  text: string;
  /** What the case is about, for reports. */
  kind: string;
}

export const FUZZ_SEED = 0x5eed_cad7;
/** Mutations of valid plans, on top of the fixed cases. */
const MUTATIONS = 260;


// ---- valid plans to start from ------------------------------------------------

const BASES: Record<string, unknown>[] = [
  {
    name: 'fuzz-triage',
    inputs: { vip: { type: 'string', default: 'ceo@example.com' } },
    defaults: { timeout: '30s', retry: { maximumAttempts: 2, initialInterval: '100ms' }, onFailure: 'abort' },
    steps: [
      { id: 'search', tool: 'shell', with: { command: 'echo \'{"emails": [{"from": "a@x"}, {"from": "b@x"}], "urgent": false}\'' } },
      { id: 'enrich', forEach: '{{ steps.search.output.json.emails }}', as: 'email', concurrency: 2, tool: 'shell', with: { command: 'echo {{ index }}', env: { FROM: '{{ email.from }}' } } },
      { id: 'alert', when: 'steps.search.output.json.urgent == true', tool: 'shell', with: { command: 'echo alert' }, compensate: { tool: 'shell', with: { command: 'echo undo' } } },
      { id: 'nap', dependsOn: ['enrich'], tool: 'sleep', with: { duration: '50ms' } },
      { id: 'report', dependsOn: ['nap'], tool: 'fs.write', with: { path: 'report.json', content: '{{ steps.enrich.output[*].stdout }}' } },
    ],
    output: { enriched: '{{ steps.enrich.output[*].stdout }}', vip: '{{ inputs.vip }}' },
  },
  {
    name: 'fuzz-loop',
    inputs: { n: { type: 'number', default: 3 }, loud: { type: 'boolean', default: false }, cfg: { type: 'json', default: { a: [1, 2] } } },
    steps: [
      { id: 'items', forEach: [1, 'two', { three: 3 }, [4]], concurrency: 3, timeout: '20s', retry: { maximumAttempts: 3, backoffCoefficient: 1.5, maximumInterval: '2s' }, tool: 'shell', with: { command: 'echo item' } },
      { id: 'check', when: 'inputs.n > 2 && !inputs.loud', tool: 'shell', with: { command: 'echo {{ inputs.n }}' }, onFailure: 'skip' },
      { id: 'save', dependsOn: ['items', 'check'], tool: 'fs.write', with: { path: 'out.txt', content: '{{ steps.items.output[*].stdout }}', append: true } },
    ],
  },
  {
    name: 'fuzz-ask',
    steps: [
      { id: 'confirm', ask: { question: 'Go on?', choices: ['yes', 'no'], timeout: '1s' }, onTimeout: 'skip' },
      { id: 'after', dependsOn: ['confirm'], tool: 'shell', with: { command: 'echo done' } },
    ],
    output: '{{ steps.after.output.stdout }}',
  },
];

// ---- values that break things ---------------------------------------------------

const WEIRD_NUMBERS = [0, -1, 0.5, -0.0001, 1e308, -1e308, 2 ** 53 + 2, 3_000_000_000, 2_147_483_648, 1e-320, NaN, Infinity, -Infinity];
const WEIRD_DURATIONS = ['0s', '0ms', '0.0000001ms', '-1s', '1e3s', '1.5.5s', '10 years', `${'9'.repeat(400)}d`, '3651d', '', ' 5m ', '5M'];
const BAD_TEMPLATES = ['{{', '{{ }}', '{{ steps..x }}', '{{ steps.nope.output }}', '{{ inputs }}', '{{ steps.search.output[x] }}', '{{ a }}{{', '}}{{ steps }}', '{{ 1abc }}', '{{ steps.search.output["unterminated }}'];
const BAD_EXPRESSIONS = ['a ==', 'x | foo', 'upper(x)', '((((', 'steps.search.output[.b == ]', '1 +', '"unterminated', 'steps.nope.status == 1', '{a: }', '? :'];
const UNICODE = ['\u0000', '\u0007', '\u001b[31m', '\u202e', '\u200b', '😀', '\ud800', 'é', '\uffff', '\r\n', '\t', '\\', '"', "'", '$(', '`'];

function randomText(r: Random, length: number): string {
  let text = '';
  while (text.length < length) text += r.chance(0.5) ? r.pick(UNICODE) : String.fromCharCode(32 + r.int(95));
  return text;
}

function randomValue(r: Random, depth = 0): unknown {
  switch (r.int(depth > 2 ? 5 : 7)) {
    case 0:
      return r.pick(WEIRD_NUMBERS);
    case 1:
      return randomText(r, 1 + r.int(20));
    case 2:
      return r.chance(0.5);
    case 3:
      return null;
    case 4:
      return r.pick([...WEIRD_DURATIONS, ...BAD_TEMPLATES, ...BAD_EXPRESSIONS]);
    case 5:
      return Array.from({ length: r.int(4) }, () => randomValue(r, depth + 1));
    default:
      return Object.fromEntries(Array.from({ length: r.int(4) }, () => [randomText(r, 1 + r.int(8)), randomValue(r, depth + 1)]));
  }
}

const nested = (depth: number, leaf: unknown = 'x'): unknown => {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = i % 2 ? { k: value } : [value];
  return value;
};

// ---- mutations ----------------------------------------------------------------

type Container = Record<string, unknown> | unknown[];

/** Every (container, key) in a value, without recursion. */
function slots(root: Container): [Container, string | number][] {
  const found: [Container, string | number][] = [];
  const stack: Container[] = [root];
  while (stack.length > 0) {
    const node = stack.pop()!;
    const keys: (string | number)[] = Array.isArray(node) ? node.map((_, i) => i) : Object.keys(node);
    for (const key of keys) {
      found.push([node, key]);
      const child = (node as Record<string | number, unknown>)[key];
      if (child !== null && typeof child === 'object') stack.push(child as Container);
    }
  }
  return found;
}

const MUTATORS: { kind: string; apply: (plan: Record<string, unknown>, r: Random) => void }[] = [
  { kind: 'wrong type', apply: (p, r) => setSomewhere(p, r, randomValue(r)) },
  { kind: 'weird number', apply: (p, r) => setSomewhere(p, r, r.pick(WEIRD_NUMBERS), ['maximumAttempts', 'concurrency', 'backoffCoefficient', 'default']) },
  { kind: 'weird duration', apply: (p, r) => setSomewhere(p, r, r.pick(WEIRD_DURATIONS), ['timeout', 'initialInterval', 'maximumInterval', 'duration']) },
  { kind: 'unicode and control characters', apply: (p, r) => setSomewhere(p, r, randomText(r, 1 + r.int(40)), ['id', 'name', 'command', 'question', 'as', 'path', 'tool']) },
  { kind: 'huge string', apply: (p, r) => setSomewhere(p, r, 'x'.repeat(r.pick([200, 5000, 300_000])), ['id', 'name', 'command', 'question', 'when', 'as']) },
  { kind: 'unknown field', apply: (p, r) => addField(p, r) },
  { kind: 'missing field', apply: (p, r) => deleteSomewhere(p, r) },
  { kind: 'bad template', apply: (p, r) => setSomewhere(p, r, `echo ${r.pick(BAD_TEMPLATES)}`, ['command', 'question', 'content', 'forEach']) },
  { kind: 'bad expression', apply: (p, r) => setStep(p, r, 'when', r.pick(BAD_EXPRESSIONS)) },
  { kind: 'deep nesting', apply: (p, r) => setSomewhere(p, r, nested(r.pick([63, 65, 200, 3000])), ['with', 'content', 'output', 'default', 'forEach', 'choices']) },
  { kind: 'dependency cycle', apply: (p) => addCycle(p) },
  { kind: 'self and unknown dependency', apply: (p, r) => setStep(p, r, 'dependsOn', [r.chance(0.5) ? 'nope' : 'search', r.pick(['confirm', 'items', 'report'])]) },
  { kind: 'duplicate step id', apply: (p) => duplicateStep(p) },
  { kind: 'long id', apply: (p, r) => setStep(p, r, 'id', `s${'x'.repeat(r.pick([127, 128, 129, 1000, 5000]))}`) },
];

/** Sets a value at a random slot, preferring slots whose key is in `keys` when there are any. */
function setSomewhere(plan: Record<string, unknown>, r: Random, value: unknown, keys?: string[]): void {
  const all = slots(plan);
  const preferred = keys ? all.filter(([, key]) => keys.includes(String(key))) : [];
  const [node, key] = r.pick(preferred.length > 0 ? preferred : all);
  (node as Record<string | number, unknown>)[key] = value;
}

function deleteSomewhere(plan: Record<string, unknown>, r: Random): void {
  const [node, key] = r.pick(slots(plan));
  if (Array.isArray(node)) node.splice(key as number, 1);
  else delete node[key];
}

function addField(plan: Record<string, unknown>, r: Random): void {
  const objects = [plan, ...slots(plan).map(([n, k]) => (n as Record<string | number, unknown>)[k]).filter((v) => v !== null && typeof v === 'object' && !Array.isArray(v))];
  const target = r.pick(objects) as Record<string, unknown>;
  const key = r.pick(['dependson', 'timout', 'retries', 'foreach', 'With', '__proto__', 'constructor', randomText(r, 6)]);
  // defineProperty: an own "__proto__" key, as JSON.parse makes one, not a new prototype.
  Object.defineProperty(target, key, { value: randomValue(r), enumerable: true, writable: true, configurable: true });
}

/** The steps that are still maps after earlier mutations. */
function stepsOf(plan: Record<string, unknown>): Record<string, unknown>[] {
  if (!Array.isArray(plan.steps)) return [];
  return plan.steps.filter((s): s is Record<string, unknown> => s !== null && typeof s === 'object' && !Array.isArray(s));
}

function setStep(plan: Record<string, unknown>, r: Random, field: string, value: unknown): void {
  const steps = stepsOf(plan);
  if (steps.length > 0) r.pick(steps)[field] = value;
}

function addCycle(plan: Record<string, unknown>): void {
  const steps = stepsOf(plan);
  const ids = steps.map((s) => s.id);
  steps.forEach((step, i) => (step.dependsOn = [ids[(i + 1) % ids.length]]));
}

function duplicateStep(plan: Record<string, unknown>): void {
  const steps = stepsOf(plan);
  if (steps.length > 0) steps.push({ ...steps[0] });
}

// ---- writing files -----------------------------------------------------------

/** JSON for deep values (YAML's stringifier recurses); YAML otherwise, half the time. */
function emit(plan: unknown, r: Random, name: string, deep: boolean): { file: string; text: string } {
  // Indenting deep values would make files quadratic in their depth.
  if (deep) return { file: `${name}.json`, text: JSON.stringify(plan) };
  if (r.chance(0.4)) return { file: `${name}.json`, text: JSON.stringify(plan, null, r.chance(0.5) ? 2 : undefined) };
  return { file: `${name}.yaml`, text: YAML.stringify(plan, { lineWidth: 0 }) };
}

/** Damage done to the text itself: cut short, stray characters, a line twice (duplicate keys). */
function damageText(text: string, r: Random): { text: string; kind: string } {
  const at = r.int(text.length + 1);
  switch (r.int(3)) {
    case 0:
      return { text: text.slice(0, at), kind: 'truncated' };
    case 1:
      return { text: `${text.slice(0, at)}${randomText(r, 1 + r.int(5))}${text.slice(at)}`, kind: 'stray characters' };
    default: {
      const lines = text.split('\n');
      const i = r.int(lines.length);
      lines.splice(i, 0, lines[i]);
      return { text: lines.join('\n'), kind: 'repeated line' };
    }
  }
}

// ---- the fixed cases ----------------------------------------------------------

const step = (id: string, extra: Record<string, unknown> = {}) => ({ id, tool: 'shell', with: { command: 'true' }, ...extra });
const planOf = (steps: unknown[], extra: Record<string, unknown> = {}) => ({ name: 'fuzz', steps, ...extra });
const json = (value: unknown) => JSON.stringify(value);

/** A step that costs no process: the long chain must also run, in minutes, not validate only. */
const cheapStep = (id: string, extra: Record<string, unknown> = {}) => ({ id, tool: 'fs.write', with: { path: 'chain.txt', content: id }, ...extra });

function chain(n: number, reversed: boolean): unknown {
  const steps = Array.from({ length: n }, (_, k) => {
    const i = reversed ? n - 1 - k : k;
    return cheapStep(`s${i}`, i > 0 ? { dependsOn: [`s${i - 1}`] } : {});
  });
  return planOf(steps);
}

function cycle(n: number, viaTemplates: boolean): unknown {
  return planOf(
    Array.from({ length: n }, (_, i) => {
      const next = `s${(i + 1) % n}`;
      return viaTemplates ? { id: `s${i}`, tool: 'shell', with: { command: `echo {{ steps.${next}.output.stdout }}` } } : step(`s${i}`, { dependsOn: [next] });
    }),
  );
}

function aliasBomb(levels: number, width: number): string {
  const name = (i: number) => `l${i}`;
  let text = `${name(0)}: &${name(0)} [${Array(width).fill('"x"').join(', ')}]\n`;
  for (let i = 1; i < levels; i++) text += `${name(i)}: &${name(i)} [${Array(width).fill(`*${name(i - 1)}`).join(', ')}]\n`;
  return `name: fuzz\nsteps:\n  - { id: a, tool: shell, with: { command: "true" } }\n${text}`;
}

function fixedCases(r: Random): FuzzPlan[] {
  const cases: FuzzPlan[] = [];
  const add = (kind: string, file: string, text: string) => cases.push({ kind, file, text });
  const yamlStep = (fields: string) => `name: fuzz\nsteps:\n  - { id: a, tool: shell, with: { command: "true" }, ${fields} }\n`;

  // Plans that validated, then hung on the server.
  for (const timeout of ['0s', '0ms', '0.0000001ms', '3651d', `${'9'.repeat(400)}d`]) add('timeout out of range', 'timeout.yaml', yamlStep(`timeout: "${timeout}"`));
  add('ask timeout zero', 'ask-timeout.yaml', 'name: fuzz\nsteps:\n  - { id: a, ask: { question: "?", timeout: 0s } }\n');
  add('default timeout zero', 'defaults-timeout.yaml', `name: fuzz\ndefaults: { timeout: 0s }\n${yamlStep('').split('\n').slice(1).join('\n')}`);
  for (const attempts of ['3000000000', '2147483648', '-1', '0', '1.5', '1e300', '.nan', '.inf']) add('maximumAttempts out of range', 'attempts.yaml', yamlStep(`retry: { maximumAttempts: ${attempts} }`));
  add('maximumInterval below initialInterval', 'intervals.yaml', yamlStep('retry: { initialInterval: 5s, maximumInterval: 1s }'));
  add('maximumInterval below the default initialInterval', 'defaults-intervals.yaml', `name: fuzz\ndefaults: { retry: { maximumInterval: 10ms } }\n${yamlStep('').split('\n').slice(1).join('\n')}`);
  for (const coefficient of ['0.5', '.inf', '-.inf', '.nan', '0']) add('backoffCoefficient out of range', 'backoff.yaml', yamlStep(`retry: { backoffCoefficient: ${coefficient} }`));
  add('5,000-character step id', 'long-id.yaml', `name: fuzz\nsteps:\n  - { id: ${'a'.repeat(5000)}, tool: shell, with: { command: "true" } }\n`);
  add('long plan name', 'long-name.json', json(planOf([step('a')], { name: 'p'.repeat(300) })));
  add('long input name', 'long-input.json', json(planOf([step('a')], { inputs: { ['i'.repeat(200)]: { type: 'string', default: 'x' } } })));
  add('10 MB command', 'huge-command.json', json(planOf([step('a', { with: { command: `echo ${'x'.repeat(10 * 1024 * 1024)}` } })])));
  add('3 MB question', 'huge-question.yaml', `name: fuzz\nsteps:\n  - { id: a, ask: { question: "${'q'.repeat(3 * 1024 * 1024)}", timeout: 1s }, onTimeout: skip }\n`);
  add('1.5 MB default sent twice', 'big-default.json', json(planOf([step('a')], { inputs: { big: { type: 'string', default: 'x'.repeat(1536 * 1024) } } })));
  add('unknown transform', 'transform.yaml', yamlStep('when: "inputs.x | foo"').replace('steps:', 'inputs: { x: { type: number, default: 1 } }\nsteps:'));
  add('function call', 'function.yaml', yamlStep('when: "now() > 0"'));
  for (const [type, value] of [['number', '"0x10"'], ['number', '.inf'], ['boolean', '"yes"'], ['json', '"not json"'], ['string', '42'], ['number', '" 12 "']]) {
    add('input default of the wrong type', 'default.yaml', `name: fuzz\ninputs: { x: { type: ${type}, default: ${value} } }\n${yamlStep('').split('\n').slice(1).join('\n')}`);
  }

  // Validation that crashed.
  add('5,000-step chain in reverse order', 'chain-reversed.json', json(chain(5000, true)));
  add('5,000-step chain in order', 'chain.json', json(chain(5000, false)));
  add('1,000-step chain in reverse order', 'chain-1000.yaml', YAML.stringify(chain(1000, true)));
  for (const n of [2, 3, 10, 100, 1000, 10_000]) add(`cycle of ${n}`, `cycle-${n}.json`, json(cycle(n, false)));
  add('cycle of 500 through templates', 'cycle-templates.json', json(cycle(500, true)));
  add('3,000-deep with', 'deep-with.json', json(planOf([{ id: 'a', tool: 'fs.write', with: { path: 'x', content: nested(3000) } }])));
  add('3,000-deep output', 'deep-output.json', json(planOf([step('a')], { output: nested(3000) })));
  add('3,000-deep ask', 'deep-ask.json', json(planOf([{ id: 'a', ask: { question: '?', choices: nested(3000) } }])));
  add('3,000-deep forEach', 'deep-foreach.json', json(planOf([step('a', { forEach: nested(3000) })])));
  add('3,000-deep input default', 'deep-default.json', json(planOf([step('a')], { inputs: { d: { type: 'json', default: nested(3000) } } })));
  add('100,000-deep JSON', 'deeper.json', `{"name":"fuzz","steps":[],"output":${'['.repeat(100_000)}${']'.repeat(100_000)}}`);
  add('3,000-deep YAML flow', 'deep-flow.yaml', `name: fuzz\nsteps: []\noutput: ${'['.repeat(3000)}${']'.repeat(3000)}\n`);
  add('1,500-deep YAML block', 'deep-block.yaml', `name: fuzz\noutput:\n${Array.from({ length: 1500 }, (_, i) => `${' '.repeat(i + 1)}k:`).join('\n')} x\n`);
  add('when of 5,000 terms', 'when-terms.yaml', yamlStep(`when: "${Array(5000).fill("steps.b.status == 'x'").join(' && ')}"`));
  add('when of 20,000 nested parentheses', 'when-parens.yaml', yamlStep(`when: "${'('.repeat(20_000)}1${')'.repeat(20_000)}"`));
  add('when with a 20,000-deep ternary', 'when-ternary.yaml', yamlStep(`when: "${Array(20_000).fill('1 ?').join(' ')} 1${' : 2'.repeat(19_999)}"`));
  add('when at the length limit', 'when-limit.yaml', yamlStep(`when: "${'('.repeat(495)}true${')'.repeat(495)}"`));
  for (const [levels, width] of [[9, 9], [20, 2], [4, 50]]) add('YAML alias bomb', 'bomb.yaml', aliasBomb(levels, width));
  add('YAML anchors and aliases used sensibly', 'aliases.yaml', 'name: fuzz\ndefaults: { retry: &r { maximumAttempts: 2 } }\nsteps:\n  - { id: a, tool: shell, retry: *r, with: { command: "true" } }\n');
  add('YAML duplicate key', 'dup.yaml', 'name: fuzz\nname: other\nsteps:\n  - { id: a, tool: shell, with: { command: "true" } }\n');
  add('JSON duplicate key', 'dup.json', '{"name": "fuzz", "steps": [{"id": "a", "tool": "shell", "with": {"command": "true", "command": "rm -rf /"}}]}');
  add('unknown YAML tag', 'tag.yaml', 'name: fuzz\nsteps: !shell [a]\n');
  add('YAML binary', 'binary-tag.yaml', 'name: fuzz\nsteps: !!binary aGVsbG8=\n');
  add('YAML 1.1 timestamp', 'timestamp.yaml', '%YAML 1.1\n---\nname: fuzz\nsteps:\n  - { id: a, tool: fs.write, with: { path: x, content: 2024-01-01 } }\n');
  add('unclosed templates', 'unclosed.yaml', yamlStep(`with: { command: "${'{{'.repeat(100_000)}" }`).replace('with: { command: "true" }, ', ''));
  add('10,000-character template', 'long-template.yaml', yamlStep('').replace('"true"', `"{{ inputs${'.x'.repeat(5000)} }}"`));
  add('2,500 steps that can all run at once', 'wide.json', json(planOf(Array.from({ length: 2500 }, (_, i) => step(`s${i}`)))));
  add('100,001 literal forEach items', 'many-items.json', json(planOf([step('a', { forEach: Array.from({ length: 100_001 }, (_, i) => i) })])));
  add('5,000 literal forEach items', 'items-5000.json', json(planOf([step('a', { forEach: Array.from({ length: 5000 }, (_, i) => i), with: { command: 'echo {{ item }}' } })])));
  add('two loops of 1,000 items', 'items-2x1000.json', json(planOf([step('a', { forEach: Array.from({ length: 1000 }, (_, i) => i) }), step('b', { forEach: Array.from({ length: 1000 }, (_, i) => i) })])));
  add('5,001 steps', 'too-many.json', json(planOf(Array.from({ length: 5001 }, (_, i) => step(`s${i}`, i > 0 ? { dependsOn: [`s${i - 1}`] } : {})))));
  add('25,000 steps', 'far-too-many.json', json(planOf(Array.from({ length: 25_000 }, () => ({})))));
  add('loop variable hiding steps', 'as-steps.yaml', yamlStep('forEach: [1], as: steps'));
  add('file over 16 MiB', 'huge-file.yaml', `# ${'x'.repeat(17 * 1024 * 1024)}\nname: fuzz\n`);

  // Plans at the limits, which must validate, and run or fail with a message.
  const quoted = (text: string) => `'${text.replace(/'/g, "'\\''")}'`;
  const limit = (what: string, file: string, plan: unknown) => add(`at the limit: ${what}`, file, json(plan));
  limit('128-character step id', 'limit-id.json', planOf([step('s'.repeat(128))]));
  limit('100-character plan name', 'limit-name.json', planOf([step('a')], { name: 'p'.repeat(100) }));
  limit('1ms timeout', 'limit-1ms.json', planOf([step('a', { timeout: '1ms', onTimeout: 'skip' })]));
  limit('3650d timeout', 'limit-3650d.json', planOf([step('a', { timeout: '3650d' })]));
  limit('retry extremes', 'limit-retry.json', planOf([step('a', { timeout: '5s', retry: { maximumAttempts: 2_147_483_647, initialInterval: '1ms', maximumInterval: '1ms', backoffCoefficient: 1 }, with: { command: 'exit 3' } })]));
  limit('unicode and control characters in data', 'limit-unicode.json', planOf([step('a', { with: { command: `echo ${quoted(UNICODE.filter((c) => c !== '\u0000').join(''))}`, env: { TEXT: '😀\u202e\u200b\t' } } })]));
  limit('1,000 literal items', 'limit-1000.json', planOf([step('a', { forEach: Array.from({ length: 1000 }, (_, i) => i), concurrency: 200 })]));
  limit('1,001 literal items', 'limit-1001.json', planOf([step('a', { forEach: Array.from({ length: 1001 }, (_, i) => `item ${i}`) })]));
  limit('nesting of 64', 'limit-depth.json', planOf([{ id: 'a', tool: 'fs.write', with: { path: 'deep.json', content: nested(62) } }], { output: nested(64) }));
  limit('a 1.5 MiB parameter', 'limit-size.json', planOf([{ id: 'a', tool: 'fs.write', with: { path: 'big.txt', content: 'x'.repeat(1536 * 1024) } }]));
  limit('2,000 tools at once', 'limit-wide.json', planOf(Array.from({ length: 2000 }, (_, i) => step(`s${i}`))));
  limit('ask with a 1ms timeout', 'limit-ask.json', planOf([{ id: 'a', ask: { question: 'now?', timeout: '1ms' }, onTimeout: 'skip' }]));
  limit('sleep of 0ms', 'limit-sleep.json', planOf([{ id: 'a', tool: 'sleep', with: { duration: '0ms' } }]));
  limit('30-term when', 'limit-when.json', planOf([step('a'), step('b', { when: Array(30).fill('steps.a.status=="completed"').join('&&') })]));

  // Files that are not plans.
  add('empty YAML', 'empty.yaml', '');
  add('empty JSON', 'empty.json', '');
  add('whitespace only', 'blank.yaml', ' \n\t\n');
  add('byte order mark only', 'bom.json', '\uFEFF');
  add('a scalar', 'scalar.yaml', '42');
  add('a list', 'list.json', '[1, 2]');
  add('NUL bytes', 'nul.yaml', 'name: fuzz\u0000\nsteps: []\n');
  add('NUL in a command', 'nul-command.json', json(planOf([step('a', { with: { command: 'echo a\u0000b' } })])));
  add('NaN in JSON', 'nan.json', '{"name": "fuzz", "steps": [{"id": "a", "tool": "shell", "retry": {"maximumAttempts": NaN}}]}');
  for (let i = 0; i < 4; i++) {
    const bytes = Array.from({ length: 64 + r.int(512) }, () => String.fromCharCode(r.int(256))).join('');
    add('binary file', `binary-${i}.${i % 2 ? 'json' : 'yaml'}`, bytes);
  }
  return cases;
}

// ---- the corpus ----------------------------------------------------------------

/** The corpus for a seed: the fixed cases, then mutations of valid plans. File names are unique. */
export function generateFuzzPlans(seed = FUZZ_SEED): FuzzPlan[] {
  const r = prng(seed);
  const plans = fixedCases(r);
  for (let i = 0; i < MUTATIONS; i++) {
    const plan = structuredClone(r.pick(BASES));
    const kinds: string[] = [];
    let deep = false;
    for (let n = 1 + r.int(3); n > 0; n--) {
      const mutator = r.pick(MUTATORS);
      mutator.apply(plan, r);
      kinds.push(mutator.kind);
      deep ||= mutator.kind === 'deep nesting';
    }
    const emitted = emit(plan, r, `mutant-${i}`, deep);
    let text = emitted.text;
    if (r.chance(0.12)) {
      const damaged = damageText(text, r);
      text = damaged.text;
      kinds.push(damaged.kind);
    }
    plans.push({ kind: kinds.join(', '), file: emitted.file, text });
  }
  return plans.map((plan, i) => ({ ...plan, file: `${String(i).padStart(3, '0')}-${plan.file}` }));
}

export interface ValidatingFuzzPlan extends FuzzPlan {
  plan: CompiledPlan;
}

/** The generated plans that validate, compiled against `workspace`: each must run to completion or fail with a message. */
export function validatingFuzzPlans(workspace: string, seed = FUZZ_SEED): ValidatingFuzzPlan[] {
  const valid: ValidatingFuzzPlan[] = [];
  for (const fuzz of generateFuzzPlans(seed)) {
    if (Buffer.byteLength(fuzz.text) > MAX_PLAN_FILE_BYTES) continue;
    try {
      const result = validatePlan(parsePlanText(fuzz.text, fuzz.file), { baseDir: workspace });
      if (result.ok) valid.push({ ...fuzz, plan: result.plan });
    } catch {
      // a parse error: not a plan that runs
    }
  }
  return valid;
}
