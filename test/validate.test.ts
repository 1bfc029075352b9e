import YAML from 'yaml';
import { PlanError, parsePlanText } from '../src/spec/load';
import { formatIssues, validatePlan } from '../src/spec/validate';

function issues(yaml: string): string[] {
  const result = validatePlan(YAML.parse(yaml), { baseDir: '/tmp' });
  if (result.ok) throw new Error('expected the plan to be invalid');
  return formatIssues(result.issues).split('\n');
}

describe('validatePlan', () => {
  test('accepts the email-triage example and compiles dependencies from dependsOn, templates and when', () => {
    const result = validatePlan(
      YAML.parse(`
name: triage
steps:
  - { id: search, tool: shell, with: { command: "cat inbox.json" } }
  - { id: enrich, forEach: "{{ steps.search.output.json.emails }}", as: email, concurrency: 2, tool: shell, with: { command: "echo {{ email.from }}" } }
  - { id: alert, when: "steps.search.output.json.urgent == true", tool: shell, with: { command: "echo alert" } }
  - { id: confirm, ask: { question: "Archive {{ steps.search.output.json.count }}?", choices: [yes, no], timeout: 1h } }
  - { id: archive, dependsOn: [alert, confirm], timeout: 30s, onFailure: ask, onTimeout: skip, tool: shell, with: { command: "./archive.sh" } }
output: { enriched: "{{ steps.enrich.output[*].json.from }}" }
`),
      { baseDir: '/work' },
    );
    if (!result.ok) throw new Error(formatIssues(result.issues));
    const needs = Object.fromEntries(result.plan.steps.map((s) => [s.id, s.needs]));
    expect(needs).toEqual({ search: [], enrich: ['search'], alert: ['search'], confirm: ['search'], archive: ['alert', 'confirm'] });
    expect(result.plan.workspace).toBe('/work');
    expect(result.plan.steps[3].timeout).toBe('1h');
  });

  test('a dangling dependency names the path and suggests the close id', () => {
    expect(
      issues(`
name: p
steps:
  - { id: search, tool: shell, with: { command: "true" } }
  - { id: b, tool: shell, with: { command: "true" } }
  - { id: c, tool: shell, with: { command: "true" } }
  - { id: d, dependsOn: [serch], tool: shell, with: { command: "true" } }
`),
    ).toEqual(['steps[3].dependsOn[0]: unknown step "serch" (did you mean "search"?)']);
  });

  test('a cycle is named step by step', () => {
    expect(
      issues(`
name: p
steps:
  - { id: a, dependsOn: [b], tool: shell, with: { command: "true" } }
  - { id: b, tool: shell, with: { command: "{{ steps.a.output.stdout }}" } }
`),
    ).toEqual(['steps[0]: dependency cycle a -> b -> a']);
  });

  test('unknown tool, bad template, bad duration and wrong types are all reported at once', () => {
    expect(
      issues(`
name: Bad_Name
steps:
  - { id: a, tool: shel, with: { command: "true" } }
  - { id: b, tool: shell, with: { command: "echo {{ steps.nope.output }}" } }
  - { id: c, tool: shell, timeout: 5 minutes, with: { command: "true" } }
  - { id: d, tool: shell, retry: { maximumAttempts: "3" }, with: { command: 42 } }
  - { id: e, tool: shell, with: { command: "echo {{ steps.a.output[x] }}" } }
  - { id: f, tool: shell, when: "steps.a.output ==", with: { command: "true" } }
`),
    ).toEqual([
      'name: plan name must hold only a-z, 0-9 and "-"',
      'steps[0].tool: unknown tool "shel" (known tools: shell, fs.read, fs.write, http.request, sleep)',
      'steps[1].with.command: unknown step "nope"',
      'steps[2].timeout: bad duration "5 minutes": use a number with ms, s, m, h or d (e.g. 30s, 5m)',
      'steps[3].retry.maximumAttempts: Invalid input: expected number, received string',
      'steps[3].with.command: Invalid input: expected string, received number',
      'steps[4].with.command: bad template "{{ steps.a.output[x] }}": cannot read "[x]"',
      expect.stringMatching(/^steps\[5\]\.when: bad expression "steps.a.output ==": /),
    ]);
  });

  test('templates must read steps that exist, inputs that are declared and not the step itself', () => {
    expect(
      issues(`
name: p
inputs: { vip: { type: string } }
steps:
  - { id: a, tool: shell, with: { command: "echo {{ inputs.vp }} {{ steps.a.output }} {{ foo.bar }}" } }
output: "{{ steps.zz.output }}"
`),
    ).toEqual([
      'steps[0].with.command: unknown input "vp"',
      'steps[0].with.command: step "a" cannot read its own output',
      'steps[0].with.command: unknown name "foo" (use steps.<id>, inputs.<name> or the loop variable)',
      'output: unknown step "zz"',
    ]);
  });

  test('a compensation may only read its step and what is upstream of it', () => {
    expect(
      issues(`
name: p
steps:
  - { id: a, tool: shell, with: { command: "true" }, compensate: { tool: shell, with: { command: "undo {{ steps.b.output.stdout }}" } } }
  - { id: b, dependsOn: [a], tool: shell, with: { command: "true" } }
`),
    ).toEqual(['steps[0].compensate.with.command: template reads step "b", which is not upstream of "a"']);
  });

  test('steps need exactly one action, and ask cannot loop', () => {
    expect(
      issues(`
name: p
steps:
  - { id: a }
  - { id: b, tool: shell, ask: { question: "?" }, with: { command: "true" } }
  - { id: c, forEach: [1, 2], ask: { question: "?" } }
  - { id: a, tool: shell, with: { command: "true" } }
`),
    ).toEqual([
      'steps[0]: a step needs either "tool" or "ask"',
      'steps[1].ask: a step has either "tool" or "ask", not both',
      'steps[2].forEach: an "ask" step cannot loop with forEach',
      'steps[3].id: duplicate step id "a"',
    ]);
  });

  test('YAML and JSON syntax errors name the line or the reason', () => {
    const yamlError = (() => {
      try {
        parsePlanText('name: p\nsteps:\n  - id: a\n   tool: shell\n', 'plan.yaml');
      } catch (err) {
        return err as PlanError;
      }
    })();
    expect(yamlError).toBeInstanceOf(PlanError);
    expect(yamlError!.issues[0].path).toBe('line 4');
    expect(() => parsePlanText('{"name": ', 'plan.json')).toThrow(PlanError);
  });
});
