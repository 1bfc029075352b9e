import YAML from 'yaml';
import { PlanError, parsePlanText } from '../../src/plan-format/load';
import { formatIssues, validatePlan } from '../../src/plan-format/validate';

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
      'steps[0].tool: unknown tool "shel" (known tools: shell, fs.read, fs.write, fs.edit, http.request, sleep, git.status, git.commit, git.merge, git.reset, code.navigate_imports, code.find_implementations, code.find_references, code.trace_data_flow, code.search; the worker\'s own: ts:<name>, mcp:<server>/<tool>)',
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
      'steps[0]: a step needs one of "tool", "ask", "agent", "decide", "echo"',
      'steps[1].ask: a step has one of "tool", "ask", "agent", "decide", "echo"; this one also has "tool"',
      'steps[2].forEach: an "ask" step cannot loop with forEach',
      'steps[3].id: duplicate step id "a"',
    ]);
  });

  test('agent and decide steps: known tools, approvals for their own tools, templates read upstream steps', () => {
    expect(
      issues(`
name: p
steps:
  - { id: a, agent: { prompt: "read {{ steps.b.output }}", tools: [fs.read, rm], model: gpt-4o, maxTurns: 0 } }
  - { id: b, agent: { prompt: go, tools: [shell, fs.read], approvals: { fs.write: ask, fs.read: { "*": deny }, shell: { "git push*": maybe } } } }
  - { id: c, decide: { prompt: "urgent?", choices: [yes] } }
  - { id: d, decide: { prompt: "{{ steps.c.output }}", choices: [a, b] }, with: { x: 1 } }
  - { id: e, agent: { prompt: go, propmt: typo } }
  - { id: f, agent: { prompt: go, tools: [fs.read], mustChange: true } }
  - { id: g, agent: { prompt: go, tools: [fs.read, fs.edit], mustChange: true } }
  - { id: h, agent: { prompt: go, tools: [shell], mustChange: [a.txt, ../b.txt] } }
  - { id: k, agent: { prompt: go, tools: [shell], mustChange: [] } }
  - { id: m, agent: { prompt: go, verify: "  " } }
  - { id: n, agent: { prompt: go, verify: { command: "npm test", attempts: 21, timeout: soon } } }
`),
    ).toEqual([
      'steps[0].agent.model: a model is provider:model, e.g. openai:gpt-4o-mini or scripted:./scenario.yaml',
      'steps[0].agent.maxTurns: Too small: expected number to be >=1',
      'steps[0].agent.tools[1]: unknown tool "rm" (known tools: shell, fs.read, fs.write, fs.edit, http.request, sleep, git.status, git.commit, git.merge, git.reset, code.navigate_imports, code.find_implementations, code.find_references, code.trace_data_flow, code.search; the worker\'s own: ts:<name>, mcp:<server>/<tool>, mcp:<server>/*)',
      'steps[1].agent.approvals.shell.git push*: "maybe" is not a decision: use allow, ask or deny',
      'steps[1].agent.approvals.fs.write: "fs.write" is not one of the agent\'s tools (shell, fs.read)',
      'steps[1].agent.approvals.fs.read: only shell takes command rules; other tools take allow, deny or ask',
      'steps[2].decide.choices: Too small: expected array to have >=2 items',
      'steps[3].with: "with" needs a "tool"',
      'steps[4].agent.propmt: unknown field "propmt" (did you mean "prompt"?)',
      "steps[5].agent.mustChange: mustChange needs a tool that changes the workspace among the agent's tools: fs.write, fs.edit, shell",
      'steps[7].agent.mustChange[1]: a file to change is a path inside the workspace: relative, without ".." or NUL bytes',
      'steps[8].agent.mustChange: Too small: expected array to have >=1 items',
      'steps[9].agent.verify: verify needs a command',
      'steps[10].agent.verify.attempts: Too big: expected number to be <=20',
      'steps[10].agent.verify.timeout: bad duration "soon": use a number with ms, s, m, h or d (e.g. 30s, 5m)',
    ]);
    const ok = validatePlan(
      YAML.parse(`
name: p
steps:
  - { id: fetch, tool: shell, with: { command: "cat mail.txt" } }
  - { id: triage, decide: { prompt: "Urgent? {{ steps.fetch.output.stdout }}", choices: [urgent, routine] } }
  - { id: reply, when: "steps.triage.output == 'urgent'", agent: { prompt: "Draft a reply", tools: [fs.write], approvals: { fs.write: ask } } }
  - { id: fix, agent: { prompt: "Fix it", tools: [fs.edit], verify: " npm test " } }
  - { id: lint, agent: { prompt: "Lint it", tools: [fs.edit], verify: { command: npx eslint ., attempts: 0 } } }
`),
      { baseDir: '/work' },
    );
    if (!ok.ok) throw new Error(formatIssues(ok.issues));
    expect(ok.plan.steps.map((s) => s.needs)).toEqual([[], ['fetch'], ['triage'], [], []]);
    // A verify command alone takes the defaults: three failures sent back, ten minutes a run.
    expect(ok.plan.steps.slice(3).map((s) => s.action.kind === 'agent' && s.action.agent.verify)).toEqual([
      { command: 'npm test', attempts: 3, timeout: '10m' },
      { command: 'npx eslint .', attempts: 0, timeout: '10m' },
    ]);
    expect(ok.plan.steps[2].action).toEqual({
      kind: 'agent',
      agent: { prompt: 'Draft a reply', tools: ['fs.write'], maxTurns: 20, approvals: { 'fs.write': 'ask' }, approvalTimeout: '24h' },
    });
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

function plan(yaml: string) {
  return validatePlan(YAML.parse(yaml), { baseDir: '/tmp' });
}

const step = (id: string, extra = '') => `  - { id: ${id}, tool: shell, with: { command: "true" }${extra} }`;

describe('validatePlan: what Temporal would refuse is refused here, with its path', () => {
  test('timeouts and intervals above zero and at most 10 years; attempts within an int32; intervals in order', () => {
    expect(
      issues(`
name: p
defaults: { timeout: 0ms, retry: { maximumInterval: 500ms } }
steps:
${step('a', ', timeout: 0s')}
${step('b', ', retry: { maximumAttempts: 3000000000, initialInterval: 0s, backoffCoefficient: 0.5 }')}
  - { id: c, ask: { question: "?", timeout: 0s } }
${step('d', ', timeout: 3651d, retry: { initialInterval: 2s, maximumInterval: 1s }')}
${step('e', ', retry: { initialInterval: 100ms }')}
`),
    ).toEqual([
      'defaults.timeout: 0ms is too short: use at least 1ms',
      'defaults.retry.maximumInterval: 500ms is shorter than initialInterval (1s): Temporal refuses that',
      'steps[0].timeout: 0ms is too short: use at least 1ms',
      'steps[1].retry.backoffCoefficient: Too small: expected number to be >=1',
      'steps[1].retry.maximumAttempts: 3000000000 is not a whole number of at most 2147483647 (Temporal keeps it in a 32-bit integer)',
      'steps[1].retry.initialInterval: 0ms is too short: use at least 1ms',
      'steps[2].ask.timeout: 0ms is too short: use at least 1ms',
      'steps[3].timeout: 3651d is too long: use at most 3650d (10 years)',
      'steps[3].retry.maximumInterval: 1s is shorter than initialInterval (2s): Temporal refuses that',
    ]);
  });

  test('ids and names have maximum lengths; a loop variable cannot hide steps, inputs or index', () => {
    expect(
      issues(`
name: ${'p'.repeat(101)}
inputs: { ${'i'.repeat(129)}: { type: string } }
steps:
${step('a'.repeat(129))}
${step('b', ', forEach: [1], as: steps')}
`),
    ).toEqual([
      'name: plan name is 101 characters long; use at most 100',
      `inputs.${'i'.repeat(129)}: input name is 129 characters long; use at most 128`,
      'steps[0].id: step id is 129 characters long; use at most 128',
      'steps[1].as: loop variable cannot be steps, inputs, index: templates read those',
    ]);
  });

  test('unknown fields are reported at their own path, with the field meant', () => {
    expect(
      issues(`
name: p
descripton: x
steps:
${step('a', ', timout: 5s, With: { x: 1 }')}
`),
    ).toEqual([
      'descripton: unknown field "descripton" (did you mean "description"?)',
      'steps[0].timout: unknown field "timout" (did you mean "timeout"?)',
      'steps[0].With: unknown field "With" (did you mean "with"?)',
    ]);
    // A field of the plan put where it does not belong is not suggested to itself.
    expect(issues(`name: p\nsandbox: { egress: { allow: [a.example] } }\nsteps:\n${step('a')}\n`)).toEqual([
      'sandbox.egress: "egress" is not a field here (it is one of another part of the plan)',
    ]);
  });

  test('input defaults have their declared type', () => {
    expect(
      issues(`
name: p
inputs:
  n: { type: number, default: "0x10" }
  m: { type: number, default: 3 }
  b: { type: boolean, default: "yes" }
  s: { type: string, default: 5 }
  j: { type: json, default: "not json" }
  k: { type: json, default: '{"a": [1]}' }
steps:
${step('a')}
`),
    ).toEqual([
      'inputs.n.default: expected a number, got "0x10"',
      'inputs.b.default: expected a boolean, got "yes"',
      'inputs.s.default: expected a string, got 5',
      'inputs.j.default: expected JSON, got "not json"',
    ]);
  });

  test('values nest at most 64 levels, in with, ask, forEach, output and input defaults', () => {
    const deep = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    const result = validatePlan(
      {
        name: 'p',
        inputs: { d: { type: 'json', default: JSON.parse(deep(100)) } },
        steps: [
          { id: 'a', tool: 'fs.write', with: { path: 'x', content: JSON.parse(deep(3000)) } },
          { id: 'b', ask: { question: '?', choices: JSON.parse(deep(70)) } },
          { id: 'c', tool: 'shell', forEach: JSON.parse(deep(65)), with: { command: 'true' } },
        ],
        output: JSON.parse(deep(100_000)),
      },
      { baseDir: '/tmp' },
    );
    expect(result.ok ? [] : result.issues.filter((i) => i.message.startsWith('nested')).map((i) => i.path)).toEqual([
      'inputs.d.default[0][0][0][0]…',
      'steps[0].with.content[0][0][0]…',
      'steps[1].ask.choices[0][0][0]…',
      'steps[2].forEach[0][0][0][0]…',
      'output[0][0][0][0]…',
    ]);
  });

  test('the key cadre marks stored values with is reserved in plan values', () => {
    const forged = { $cadre: 'stored', sha256: 'a'.repeat(64), bytes: 1, kind: 'string', store: '/etc' };
    const result = validatePlan(
      { name: 'p', steps: [{ id: 'a', tool: 'fs.write', with: { path: 'x', content: { nested: [forged] } } }], output: forged },
      { baseDir: '/tmp' },
    );
    expect(result.ok ? [] : result.issues.map((i) => `${i.path}: ${i.message}`)).toEqual([
      'steps[0].with.content.nested[0].$cadre: the key "$cadre" is reserved for values cadre keeps outside history: name it otherwise',
      'output.$cadre: the key "$cadre" is reserved for values cadre keeps outside history: name it otherwise',
    ]);
  });

  test('a 5,000-step chain written in reverse validates, with a history warning at steps', () => {
    const n = 5000;
    const steps = Array.from({ length: n }, (_, k) => {
      const i = n - 1 - k;
      return { id: `s${i}`, tool: 'shell', with: { command: 'true' }, ...(i > 0 && { dependsOn: [`s${i - 1}`] }) };
    });
    const result = validatePlan({ name: 'chain', steps }, { baseDir: '/tmp' });
    if (!result.ok) throw new Error(formatIssues(result.issues));
    expect(result.plan.steps[0].needs).toEqual(['s4998']);
    expect(formatIssues(result.warnings)).toMatch(
      /^steps: .*past Temporal's 512\.0 KiB warning threshold.*\nsteps: a run's history would hold about 30,010 events \(5,000 steps, none much bigger than the others\), past Temporal's warning threshold of 10,240 events/,
    );
  });

  test('a 10,000-step cycle is too many steps and one cycle, named by its ends', () => {
    const n = 10_000;
    const steps = Array.from({ length: n }, (_, i) => ({ id: `s${i}`, dependsOn: [`s${(i + 1) % n}`], tool: 'shell', with: { command: 'true' } }));
    const result = validatePlan({ name: 'cycle', steps }, { baseDir: '/tmp' });
    expect(result.ok ? [] : formatIssues(result.issues).split('\n')).toEqual([
      'steps: 10,000 steps; a plan may have at most 5,000: split it into several plans',
      'steps[0]: dependency cycle s0 -> s9999 -> s9998 -> s9997 -> s9996 -> s9995 -> … -> s5 -> s4 -> s3 -> s2 -> s1 -> s0 (10,000 steps)',
    ]);
  });

  test('the start request must fit Temporal: reported at the biggest parts of the plan', () => {
    const result = validatePlan(
      {
        name: 'p',
        steps: [
          { id: 'a', tool: 'fs.write', with: { path: 'big.txt', content: 'x'.repeat(10 * 1024 * 1024) } },
          { id: 'b', ask: { question: 'q'.repeat(3 * 1024 * 1024) } },
        ],
      },
      { baseDir: '/tmp' },
    );
    expect(result.ok ? [] : formatIssues(result.issues).split('\n')).toEqual([
      'steps[0].with.content: the plan comes to 13.0 MiB as JSON; Temporal takes at most 2.0 MiB to start a run ' +
        '(biggest: steps[0].with.content: 10.0 MiB; steps[1].ask.question: 3.0 MiB): keep large data in files and read them with fs.read',
      'steps[1].ask.question: the question is 3.0 MiB; a question holds at most 64.0 KiB: people read it',
    ]);
    // Defaults are sent twice (in the plan and as the inputs): the compiled request is what counts.
    const twice = plan(`
name: p
inputs: { big: { type: string, default: "${'x'.repeat(1100 * 1024)}" } }
steps:
${step('a')}
`);
    expect(twice.ok ? '' : formatIssues(twice.issues)).toMatch(/^inputs\.big\.default: the plan and its inputs come to 2\.1 MiB as JSON/);
    // Defaults are copied into every step: five steps make 600 KiB of error types 3 MiB.
    const types = Array.from({ length: 12_000 }, (_, i) => `PermanentError${String(i).padStart(36, '0')}`);
    const copied = validatePlan(
      { name: 'p', defaults: { retry: { nonRetryableErrorTypes: types } }, steps: ['a', 'b', 'c', 'd', 'e'].map((id) => ({ id, tool: 'shell', with: { command: 'true' } })) },
      { baseDir: '/tmp' },
    );
    expect(copied.ok ? '' : formatIssues(copied.issues)).toMatch(
      /^steps\[\d\]\.retry\.nonRetryableErrorTypes: the plan and its inputs come to 3\.0 MiB as JSON; .*\(biggest: steps\[\d\]\.retry\.nonRetryableErrorTypes: 621\.1 KiB; steps/,
    );
  });

  test('more tools that could run at once than Temporal allows pending is refused', () => {
    const wide = plan(`
name: p
steps:
${Array.from({ length: 11 }, (_, i) => step(`s${i}`, ', forEach: "{{ inputs.list }}", concurrency: 200')).join('\n')}
${step('last', ', dependsOn: [s0]')}
inputs: { list: { type: json } }
`);
    expect(wide.ok ? [] : formatIssues(wide.issues)).toBe(
      'steps[0]: up to 2,200 tools could be running at once (s0, s1, s2 and 8 more wait for nothing from each other); ' +
        'Temporal allows 2,000 per run: add dependsOn between them, or lower forEach concurrency',
    );
  });

  test('history warnings name the step that costs most; long literal loops count as child workflows', () => {
    const items = (n: number) => `[${Array.from({ length: n }, (_, i) => i).join(',')}]`;
    const big = plan(`
name: p
steps:
${step('small')}
${step('loop', `, forEach: ${items(1000)}`)}
${step('loop2', `, forEach: ${items(1000)}`)}
`);
    if (!big.ok) throw new Error(formatIssues(big.issues));
    expect(formatIssues(big.warnings)).toMatch(/^steps\[1\]\.forEach: a run's history would hold about 12,016 events \(this step about 6,000\), past Temporal's warning threshold/);
    const children = plan(`
name: p
steps:
${step('loop', `, forEach: ${items(50_000)}`)}
`);
    if (!children.ok) throw new Error(formatIssues(children.issues));
    expect(children.warnings).toEqual([]);
  });

  test('templates that cannot be parsed safely are reported without parsing them', () => {
    expect(
      issues(`
name: p
steps:
${step('a')}
  - { id: b, tool: shell, with: { command: "${'{{'.repeat(100_000)}" } }
  - { id: c, tool: shell, with: { command: "{{ steps.a${'.x'.repeat(1100)} }}" } }
`),
    ).toEqual([
      `steps[1].with.command: bad template in "${'{{'.repeat(30)}… (200,000 characters)": "{{" without "}}"`,
      expect.stringMatching(/^steps\[2\]\.with\.command: template "\{\{ steps\.a\.x\.x.*" is longer than 2000 characters/),
    ]);
  });

  test('an unexpected failure inside validation is a plan problem saying where, not a crash', () => {
    const raw = { name: 'p', steps: [{ id: 'a', tool: 'shell', with: { command: 'true' } }] };
    Object.defineProperty(raw.steps[0], 'when', { enumerable: true, get: () => { throw new TypeError('boom'); } });
    expect(validatePlan(raw, { baseDir: '/tmp' })).toEqual({
      ok: false,
      issues: [{ path: '', message: expect.stringContaining('validation stopped unexpectedly while checking the shape of the plan (TypeError: boom)') }],
    });
  });
});

describe('parsePlanText: any file gives plan problems with lines, never a crash', () => {
  const problems = (text: string, file: string) => {
    try {
      parsePlanText(text, file);
    } catch (err) {
      if (err instanceof PlanError) return formatIssues(err.issues).split('\n');
      throw err;
    }
    return [];
  };

  test('alias bombs, deep nesting, unknown tags and duplicate keys', () => {
    let bomb = 'a: &a [x, x, x, x, x, x, x, x, x]\n';
    for (let i = 1; i < 9; i++) bomb += `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9).fill(`*${String.fromCharCode(96 + i)}`).join(', ')}]\n`;
    expect(problems(bomb, 'bomb.yaml')).toEqual(['line 2: YAML aliases (*name) expand to too much (more than 100 copies): write the values out']);
    expect(problems(`name: p\noutput: ${'['.repeat(5000)}${']'.repeat(5000)}\n`, 'deep.yaml')).toEqual([
      'line 2: nested too deeply for the YAML parser: plans nest values at most 64 levels',
    ]);
    expect(problems('name: p\nsteps: !shell [a]\n', 'tag.yaml')).toEqual([expect.stringMatching(/^line 2: Unresolved tag: !shell/)]);
    expect(problems('name: p\nname: q\n', 'dup.yaml')).toEqual([expect.stringMatching(/^line 2: Map keys must be unique/)]);
    expect(problems('{"name": "p",\n "steps": [{"id": "a", "id": "b"}]}', 'dup.json')).toEqual(['line 2: duplicate key "id": JSON keeps only the last; remove one']);
    expect(problems('{"a": {"x": 1}, "b": {"x": 2}, "c": ["x", "x"]}', 'ok.json')).toEqual([]);
    expect(problems(`${'['.repeat(100_000)}${']'.repeat(100_000)}`, 'deep.json')).toEqual([]);
  });
});

describe('step ids with hyphens', () => {
  test('steps.fetch-data is read in templates and when, and becomes a dependency', () => {
    const result = validatePlan(
      YAML.parse(`
name: audit
steps:
  - { id: fetch-data, tool: shell, with: { command: "echo 3" } }
  - { id: security-audit, when: "steps.fetch-data.output.json > 1", tool: shell, with: { command: "echo {{ steps.fetch-data.output.stdout }}" } }
  - { id: report_2, dependsOn: [security-audit], tool: shell, with: { command: "true" } }
`),
      { baseDir: '/tmp' },
    );
    if (!result.ok) throw new Error(formatIssues(result.issues));
    expect(Object.fromEntries(result.plan.steps.map((s) => [s.id, s.needs]))).toEqual({ 'fetch-data': [], 'security-audit': ['fetch-data'], report_2: ['security-audit'] });
  });

  test('the rules: ids may hold hyphens inside; input names and loop variables may not; consult-<n> is kept for teams', () => {
    expect(
      issues(`
name: p
inputs:
  max-items: { type: number, default: 1 }
steps:
  - { id: a-, tool: shell, with: { command: "true" } }
  - { id: -a, tool: shell, with: { command: "true" } }
  - { id: consult-1, tool: shell, with: { command: "true" } }
  - { id: each, forEach: [1], as: my-item, tool: shell, with: { command: "true" } }
  - { id: b, when: "steps.fetch-dat.output == 1", tool: shell, with: { command: "true" } }
  - { id: fetch-data, tool: shell, with: { command: "true" } }
`),
    ).toEqual([
      'inputs.max-items: input names must be plain names: a letter, then letters, digits and _',
      'steps[0].id: step id must start with a letter and hold only letters, digits, _ and - (not at the end)',
      'steps[1].id: step id must start with a letter and hold only letters, digits, _ and - (not at the end)',
      "steps[2].id: step ids consult-<n> are kept for the child workflows of a team's specialists: pick another id",
      'steps[3].as: loop variable must be a plain name: a letter, then letters, digits and _',
      'steps[4].when: unknown step "fetch-dat" (did you mean "fetch-data"?)',
    ]);
  });
});
