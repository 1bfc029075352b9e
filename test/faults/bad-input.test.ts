/**
 * Input no retry can fix (NUL bytes, environments too big to exec) fails at once, permanently,
 * naming the field: in `cadre validate` when the value is literal, in the activity when templated.
 */
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import YAML from 'yaml';
import { createActivities } from '../../src/activities';
import { openBoundary } from '../../src/activities/confinement';
import { runShell } from '../../src/activities/tools/shell';
import { WATCHDOG_ARGS } from '../../src/processes/tied-process';
import { ARG_MAX, MAX_ARG_STRLEN, envStrings, execBytes } from '../../src/plan-format/tools';
import { formatIssues, validatePlan } from '../../src/plan-format/validate';
import { compile, startPlan, step, tempWorkspace, withWorker } from '../support/harness';
import { INLINE_OUTPUT_LIMITS, defaultToolSandbox } from '../../src/activities/tools/context';
import { applicationFailure } from '../support/failures';

const { runTool } = createActivities();
const env = new MockActivityEnvironment({ attempt: 1 }, { logger: new DefaultLogger('ERROR') });
const ws = tempWorkspace();

const big = 'x'.repeat(MAX_ARG_STRLEN); // with its name, one byte over the per-string limit
/** Plan env values that fit ARG_MAX on their own but not with the worker's environment. */
function justUnderArgMax(command: string): Record<string, string> {
  const chunk = 100 * 1024;
  const out: Record<string, string> = {};
  let room = ARG_MAX - execBytes([command]);
  for (let i = 0; room > 0; i++) {
    const name = `V${i}`;
    const size = Math.min(chunk, room - execBytes([`${name}=`]));
    if (size <= 0) break;
    out[name] = 'y'.repeat(size);
    room -= execBytes([`${name}=${out[name]}`]);
  }
  return out;
}

const shell = (params: Record<string, unknown>) => env.run(runTool, { tool: 'shell', params, workspace: ws, stepId: 'bad' });

describe('bad tool input is permanent and names the field', () => {
  test.each([
    ['a NUL byte in the command', { command: 'echo a\0b' }, 'command: contains a NUL byte'],
    ['a NUL byte in an env value', { command: 'true', env: { V: 'a\0b' } }, 'env.V: contains a NUL byte'],
    ['a NUL byte in an env name', { command: 'true', env: { 'V\0W': 'x' } }, 'env.V\0W: an environment variable name'],
    ['an "=" in an env name', { command: 'true', env: { 'A=B': 'x' } }, 'env.A=B: an environment variable name'],
    ['a NUL byte in cwd', { command: 'true', cwd: 'a\0b' }, 'cwd: contains a NUL byte'],
    ['an env value over MAX_ARG_STRLEN', { command: 'true', env: { BIG: big } }, `env.BIG: is ${MAX_ARG_STRLEN + 4} bytes with its name`],
    ['a command over MAX_ARG_STRLEN', { command: `: ${big}` }, `command: is ${MAX_ARG_STRLEN + 2} bytes`],
    ['an environment over ARG_MAX', { command: 'true', env: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`V${i}`, 'y'.repeat(120_000)])) }, 'env: command and environment need'],
    ['an environment over ARG_MAX only with the sandbox\'s arguments', { command: 'true', env: justUnderArgMax('true') }, 'command, env: command and environment need'],
  ])('shell: %s', async (_name, params, message) => {
    const err = await applicationFailure(shell(params));
    expect(err).toMatchObject({ type: 'BadToolInput', nonRetryable: true });
    expect(err.message).toContain(message);
  });

  test('a spawn that fails with E2BIG is bad input, not a temporary error', async () => {
    // Past the schema (as a future tool or a smaller system limit would be): the kernel refuses the exec.
    const boundary = await openBoundary(ws, { name: 'workspace' });
    const ctx = { boundary, stepId: 'bad', attempt: 1, signal: new AbortController().signal, limits: INLINE_OUTPUT_LIMITS, sandbox: defaultToolSandbox() };
    expect(execBytes([...WATCHDOG_ARGS, 'true', ...envStrings({ ...process.env, BIG: big })])).toBeLessThan(ARG_MAX);
    const e2big = await applicationFailure(runShell({ command: 'true', env: { BIG: big } }, ctx));
    expect(e2big).toMatchObject({ type: 'BadToolInput', nonRetryable: true, message: expect.stringContaining('E2BIG') });
    const nul = await applicationFailure(runShell({ command: 'echo a\0b' }, ctx));
    expect(nul).toMatchObject({ type: 'BadToolInput', nonRetryable: true, message: expect.stringContaining('null bytes') });
  });

  test('http.request: a header no request can carry is bad input', async () => {
    const err = await applicationFailure(env.run(runTool, { tool: 'http.request', params: { url: 'http://127.0.0.1:9/', headers: { 'x-a': 'b\r\nx-injected: 1' } }, workspace: ws, stepId: 'bad' }));
    expect(err).toMatchObject({ type: 'BadToolInput', nonRetryable: true });
  });

  test('cadre validate reports literal values with their path; templated ones wait for the run', () => {
    const result = validatePlan(
      YAML.parse(`
name: bad
steps:
  - { id: nul, tool: shell, with: { command: "echo a\\0b", cwd: "x\\0" } }
  - { id: huge, tool: shell, with: { command: "true", env: { BIG: "${big}", "A=B": "x" } } }
  - { id: path, tool: fs.read, with: { path: "a\\0b" } }
  - { id: templated, tool: shell, with: { command: "true", env: { BIG: "{{ steps.huge.output.stdout }}" } } }
`),
      { baseDir: ws },
    );
    if (result.ok) throw new Error('expected the plan to be invalid');
    const issues = formatIssues(result.issues);
    expect(issues).toContain('steps[0].with.command: contains a NUL byte');
    expect(issues).toContain('steps[0].with.cwd: contains a NUL byte');
    expect(issues).toContain(`steps[1].with.env.BIG: is ${MAX_ARG_STRLEN + 4} bytes with its name`);
    expect(issues).toContain('steps[1].with.env.A=B: an environment variable name');
    expect(issues).toContain('steps[2].with.path: contains a NUL byte');
    expect(issues).not.toContain('steps[3]');
  });

  test('in a plan, templated bad input fails on the first attempt with no retries', async () => {
    const plan = compile(
      `
name: bad-input
inputs: { big: { type: string }, nul: { type: string } }
defaults: { retry: { maximumAttempts: 3, initialInterval: 100ms }, onFailure: skip }
steps:
  - { id: big_env, tool: shell, with: { command: "true", env: { BIG: "{{ inputs.big }}" } } }
  - { id: nul_command, tool: shell, with: { command: "echo {{ inputs.nul }}" } }
  - { id: nul_cwd, tool: shell, with: { command: "true", cwd: "{{ inputs.nul }}" } }
  - { id: nul_path, tool: fs.write, with: { path: "{{ inputs.nul }}", content: x } }
`,
      ws,
    );
    const d = await withWorker(async (h) => h.client.result(await startPlan(h, plan, { big, nul: 'a\0b' })));
    for (const { id } of plan.steps) {
      expect(step(d, id)).toMatchObject({ status: 'skipped', attempts: 1, error: expect.stringContaining('BadToolInput') });
    }
  });
});
