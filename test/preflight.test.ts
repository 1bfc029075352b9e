/**
 * Preflight: `cadre validate --preflight` (and `cadre run` before it starts) reports what keeps a
 * plan from running, each problem with a stable code: CADRE-E1xx the plan, E2xx this machine, E3xx
 * the server.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PREFLIGHT_CODES } from '../src/preflight/codes';
import { programsChecked } from '../src/preflight/shell';
import { variablesOf } from '../src/preflight/variables';
import { runCadre } from './support/cli';
import { tempWorkspace, uniqueId, withWorker } from './support/harness';

test('the programs a shell command runs, and the variables it reads without setting them', async () => {
  const programs = await Promise.all(['git status', 'FOO=1 BAR=2 node x.js', './archive.sh --all', 'cd /tmp && ls', 'echo hi', '"quoted" x', 'n=$(cat f); echo $((n+1)) > f'].map(programsChecked));
  expect(programs).toEqual([['git'], ['node'], ['./archive.sh'], ['ls'], [], ['quoted'], ['cat']]);
  expect((await variablesOf('curl -H "Authorization: $API_TOKEN" ${BASE_URL}/x; echo ${MAYBE:-none} $lower $1')).read).toEqual(['API_TOKEN', 'BASE_URL']);
  expect((await variablesOf('COUNT=3; echo $COUNT; export NAME=x; echo $NAME; for ITEM in a b; do echo $ITEM; done; read -r LINE; echo $LINE')).read).toEqual([]);
});

test('README lists every preflight code with its meaning', () => {
  const readme = readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');
  for (const [code, meaning] of Object.entries(PREFLIGHT_CODES)) expect(readme).toContain(`| \`${code}\` | ${meaning} |`);
});

test('validate --preflight and run report each problem with its code; run refuses to start until --no-preflight', async () => {
  const dir = tempWorkspace();
  mkdirSync(path.join(dir, 'not-a-repo'));
  writeFileSync(path.join(dir, 'ok.sh'), '#!/bin/sh\necho ok\n', { mode: 0o755 });
  writeFileSync(
    path.join(dir, 'broken.yaml'),
    `name: broken-env
egress: { allow: [no-such-host.invalid] }
steps:
  - { id: tool, tool: shell, with: { command: "no-such-tool-cadre --version" } }
  - { id: script, tool: shell, with: { command: "./missing.sh" } }
  - { id: script-ok, tool: shell, with: { command: "./ok.sh && echo \${DEFAULTED:-x}" } }
  - { id: token, tool: shell, with: { command: "echo $CADRE_PREFLIGHT_UNSET_TOKEN $HOME", env: { GIVEN: "1" } } }
  - { id: given, tool: shell, with: { command: "echo $GIVEN", env: { GIVEN: "1" } } }
  - { id: call, tool: http.request, with: { url: "http://no-such-host.invalid/ping" } }
  - { id: branch, worktree: { repo: not-a-repo }, tool: shell, with: { command: "true" } }
  - { id: hidden, tool: shell, with: { command: "echo $CADRE_PREFLIGHT_HIDDEN" } }
  - { id: local, tool: http.request, with: { url: "http://127.0.0.1:9/ping" } }
`,
  );
  writeFileSync(path.join(dir, 'good.yaml'), 'name: good-env\ninputs: { n: { type: number } }\nsteps:\n  - { id: hi, tool: shell, with: { command: "echo {{ inputs.n }}" } }\n');
  writeFileSync(
    path.join(dir, 'later.yaml'),
    'name: later-env\nsteps:\n  - { id: make, tool: shell, with: { command: "touch made.sh && chmod +x made.sh" } }\n  - { id: use, dependsOn: [make], tool: shell, with: { command: "./made.sh" } }\n',
  );
  writeFileSync(path.join(dir, 'unparsable.yaml'), 'name: [oops\n');
  writeFileSync(path.join(dir, 'invalid.yaml'), 'name: invalid\nsteps:\n  - { id: a, tool: shell, with: { command: "true" }, dependsOn: [ghost] }\n');

  await withWorker(async (h) => {
    const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: process.env.CADRE_TEST_ADDRESS, CADRE_TASK_QUEUE: h.taskQueue, CADRE_LOG_LEVEL: 'ERROR' };
    delete env.CADRE_PREFLIGHT_UNSET_TOKEN;
    env.CADRE_PREFLIGHT_HIDDEN = 'set on this machine';
    const cadre = (...args: string[]) => runCadre(args, dir, env);

    const broken = await cadre('validate', 'broken.yaml', '--preflight', '--json');
    expect(broken.code).toBe(2);
    expect(JSON.parse(broken.stdout).problems).toEqual([
      { code: 'CADRE-E201', level: 'error', path: 'steps[0].with.command', message: '"no-such-tool-cadre" is not on PATH' },
      { code: 'CADRE-E201', level: 'error', path: 'steps[1].with.command', message: '"./missing.sh" is not in the workspace' },
      { code: 'CADRE-E204', level: 'error', path: 'steps[3].with.command', message: "$CADRE_PREFLIGHT_UNSET_TOKEN is not set (set it, or give it in the step's env)" },
      { code: 'CADRE-E202', level: 'error', path: 'steps[6].worktree.repo', message: `${path.join(dir, 'not-a-repo')} is not a git repository` },
      {
        code: 'CADRE-E204',
        level: 'error',
        path: 'steps[7].with.command',
        message: "$CADRE_PREFLIGHT_HIDDEN is set here, but the sandbox passes tools only the variables it is told: add CADRE_PREFLIGHT_HIDDEN to the plan's sandbox.env",
      },
      { code: 'CADRE-E206', level: 'error', path: 'steps[8].with.url', message: '127.0.0.1:9 is this machine: the run refuses it unless egress.loopback lists 9' },
      { code: 'CADRE-E203', level: 'error', path: 'steps[5].with.url', message: 'the host no-such-host.invalid does not resolve' },
    ]);
    const refused = await cadre('run', 'broken.yaml');
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('cadre: broken.yaml: the plan would fail here (`cadre run --no-preflight` starts it anyway, for workers elsewhere):\n  CADRE-E201 steps[0].with.command: "no-such-tool-cadre" is not on PATH');
    expect((await cadre('run', 'broken.yaml', '--no-preflight', '--id', uniqueId('anyway'))).code).toBe(0);

    // Ready: a worker polls the task queue.
    const ready = await cadre('validate', 'good.yaml', '--preflight', '-i', 'n=3');
    expect(ready).toMatchObject({ code: 0, stdout: `good.yaml: ready to run (plan "good-env", 1 steps; a worker polls "${h.taskQueue}")\n` });
    // What a step before may create is a warning: validate says ready, run starts, both show it.
    const madeLater = 'warning: CADRE-E201 steps[1].with.command: "./made.sh" is not in the workspace: step "make" runs before it and may create it';
    const later = await cadre('validate', 'later.yaml', '--preflight');
    expect(later).toMatchObject({ code: 0, stdout: `later.yaml: ready to run (plan "later-env", 2 steps; a worker polls "${h.taskQueue}")\n  ${madeLater}\n` });
    expect(JSON.parse((await cadre('validate', 'later.yaml', '--preflight', '--json')).stdout)).toMatchObject({ ok: true, problems: [{ code: 'CADRE-E201', level: 'warning', path: 'steps[1].with.command' }] });
    expect(await cadre('run', 'later.yaml', '--id', uniqueId('later'))).toMatchObject({ code: 0, stderr: expect.stringContaining(madeLater) });
    // The plan's own problems and its inputs.
    const codes = async (...args: string[]) => JSON.parse((await cadre('validate', ...args, '--preflight', '--json')).stdout).problems.map((p: { code: string }) => p.code);
    expect(await codes('unparsable.yaml')).toEqual(['CADRE-E101']);
    expect(await codes('missing.yaml')).toEqual(['CADRE-E101']);
    expect(await codes('invalid.yaml')).toEqual(['CADRE-E102']);
    expect(await codes('good.yaml', '-i', 'n=many')).toEqual(['CADRE-E103']);
    // No worker on this queue: exit 1; run warns and starts all the same (the run waits for one).
    const idle = uniqueId('idle-queue');
    const lonely = await runCadre(['validate', 'good.yaml', '--preflight', '-i', 'n=1', '--task-queue', idle], dir, env);
    expect(lonely).toMatchObject({ code: 1, stdout: expect.stringContaining(`CADRE-E303 no worker polls task queue "${idle}"`) });
    const started = await runCadre(['run', 'good.yaml', '-i', 'n=1', '--task-queue', idle, '--id', uniqueId('waits')], dir, env);
    expect(started).toMatchObject({ code: 0, stderr: expect.stringContaining(`warning: CADRE-E303 no worker polls task queue "${idle}"`) });

    // Prices: the config file here prices one model of two; a cost budget on the other is refused.
    writeFileSync(path.join(dir, 'cadre.config.yaml'), 'models:\n  prices:\n    "openai:gpt-4o-mini": { input: 0.15, output: 0.6, cachedInput: 0.075 }\n');
    const agentOn = (model: string) => `{ id: work, agent: { prompt: hi, model: "${model}", budget: { cost: 0.5 } } }`;
    writeFileSync(path.join(dir, 'priced.yaml'), `name: priced\nsteps:\n  - ${agentOn('openai:gpt-4o-mini')}\n  - { id: pick, decide: { prompt: which, choices: [a, b], model: "openai:gpt-4o" } }\n`);
    writeFileSync(path.join(dir, 'unpriced.yaml'), `name: unpriced\nsteps:\n  - ${agentOn('openai:gpt-4o')}\n`);
    const priced = await cadre('validate', 'priced.yaml', '--preflight');
    expect(priced).toMatchObject({ code: 0, stdout: expect.stringContaining('\n  prices: openai:gpt-4o no price; openai:gpt-4o-mini $0.15 in, $0.6 out, $0.075 cached in per million tokens\n') });
    const unpriced = await cadre('validate', 'unpriced.yaml', '--preflight', '--json');
    expect(unpriced.code).toBe(2);
    expect(JSON.parse(unpriced.stdout)).toMatchObject({
      prices: { 'openai:gpt-4o': null },
      problems: [{ code: 'CADRE-E207', level: 'error', path: 'steps[0].agent.budget.cost', message: 'no price for openai:gpt-4o (steps[0].agent) in cadre.config.yaml (models.prices): a cost budget needs one' }],
    });
  });

  const unreachable = await runCadre(['validate', 'good.yaml', '--preflight', '-i', 'n=1', '--json'], dir, { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1' });
  expect(unreachable.code).toBe(1);
  expect(JSON.parse(unreachable.stdout).problems).toEqual([{ code: 'CADRE-E301', level: 'error', path: '', message: expect.stringContaining('cannot reach Temporal at 127.0.0.1:1') }]);
});
