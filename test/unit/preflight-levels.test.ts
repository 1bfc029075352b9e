/**
 * Preflight's two levels: an error is what the run would certainly fail on (a program that is
 * nowhere, a workspace or repository nothing before can create), a warning what a step before, or
 * the command itself, may create first. And the variables a command reads, read by the parser.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { formatProblems, problem } from '../../src/preflight/codes';
import { type EnvironmentProbe, environmentProblems } from '../../src/preflight/environment';
import { variablesOf } from '../../src/preflight/variables';
import { formatIssues, validatePlan } from '../../src/plan-format/validate';

const probe: EnvironmentProbe = { env: { PATH: process.env.PATH, SET_HERE: '1' }, resolves: async () => true };

const made: string[] = [];
afterAll(() => made.forEach((dir) => rmSync(dir, { recursive: true, force: true })));

function workspace(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'cadre-levels-'));
  made.push(dir);
  mkdirSync(path.join(dir, 'sub'));
  writeFileSync(path.join(dir, 'sub', 'there.sh'), '#!/bin/sh\n');
  chmodSync(path.join(dir, 'sub', 'there.sh'), 0o755);
  return dir;
}

/** The findings of a plan in a fresh workspace, as [code, level, path] (no sandbox: the machine's bubblewrap is not the point). */
async function findings(steps: unknown[], extra: Record<string, unknown> = {}): Promise<[string, string, string][]> {
  const result = validatePlan({ name: 'levels', sandbox: 'none', steps, ...extra }, { baseDir: workspace() });
  if (!result.ok) throw new Error(formatIssues(result.issues));
  return (await environmentProblems(result.plan, probe)).map((p) => [p.code, p.level, p.path]);
}

const shell = (id: string, command: string, more: Record<string, unknown> = {}) => ({ id, tool: 'shell', with: { command }, ...more });
const E201 = (level: string, step = 0): [string, string, string] => ['CADRE-E201', level, `steps[${step}].with.command`];

describe('a program that is missing', () => {
  test.each([
    ['a bare name not on PATH', 'no-such-tool-cadre --version'],
    ['a bare name after other programs (steps do not install on PATH)', 'npm ci && no-such-tool-cadre'],
    ['a script no step before can write', './missing.sh'],
    ['an absolute path', '/no/such/dir/tool'],
  ])('is an error: %s', async (_what, command) => {
    expect(await findings([shell('a', command)])).toEqual([E201('error')]);
  });

  test('is an error when the only writer runs at the same time, or only reads', async () => {
    expect(await findings([shell('make', 'touch made.sh'), shell('use', './made.sh')])).toEqual([E201('error', 1)]);
    expect(await findings([{ id: 'look', tool: 'fs.read', with: { path: 'x' } }, shell('use', './made.sh', { dependsOn: ['look'] })])).toEqual([E201('error', 1)]);
  });

  test.each([
    ['a shell step', shell('make', 'touch made.sh')],
    ['fs.write', { id: 'make', tool: 'fs.write', with: { path: 'made.sh', content: 'x' } }],
    ['an agent', { id: 'make', agent: { prompt: 'write made.sh', tools: ['fs.read'] } }],
  ])('is a warning when %s runs before it', async (_what, before) => {
    const [found] = await findings([before, shell('use', './made.sh', { dependsOn: ['make'] })]);
    expect(found).toEqual(E201('warning', 1));
  });

  test('a warning names the steps before it', async () => {
    const result = validatePlan({ name: 'levels', steps: [shell('make', 'true'), shell('use', './made.sh', { dependsOn: ['make'] })] }, { baseDir: workspace() });
    if (!result.ok) throw new Error(formatIssues(result.issues));
    const [found] = (await environmentProblems(result.plan, probe)).filter((p) => p.code === 'CADRE-E201');
    expect(formatProblems([found])).toBe('warning: CADRE-E201 steps[1].with.command: "./made.sh" is not in the workspace: step "make" runs before it and may create it');
  });

  test.each([
    ['the command may build it first', 'sh build.sh && ./bin/app'],
    ['the command may write it first', 'printf "#!/bin/sh\\n" > gen.sh; chmod +x gen.sh; ./gen.sh'],
    ['the command changes directory first', 'cd sub && ./there.sh'],
    ['the command looks the name up first', 'command -v no-such-tool-cadre >/dev/null && no-such-tool-cadre'],
    ['the command changes PATH', 'export PATH="$PWD/bin:$PATH"; no-such-tool-cadre'],
    ['the command sources a file', '. ./env.sh && no-such-tool-cadre'],
  ])('is a warning when %s', async (_what, command) => {
    expect(await findings([shell('a', command)])).toEqual([E201('warning')]);
  });

  test("is a warning when the step's env sets PATH", async () => {
    expect(await findings([shell('a', 'no-such-tool-cadre', { with: { command: 'no-such-tool-cadre', env: { PATH: '/opt/tools/bin' } } })])).toEqual([E201('warning')]);
  });

  test('is looked up in the step cwd; programs another machine runs are not looked up here', async () => {
    expect(await findings([shell('a', './there.sh', { with: { command: './there.sh', cwd: 'sub' } })])).toEqual([]);
    const ssh = (process.env.PATH ?? '').split(':').some((dir) => existsSync(path.join(dir, 'ssh')));
    expect(await findings([shell('a', "ssh -o BatchMode=yes host 'no-such-tool-cadre --restart'")])).toEqual(ssh ? [] : [E201('error')]);
  });
});

describe('a workspace or worktree repository that is missing', () => {
  test('the workspace is an error: every step runs in it', async () => {
    expect(await findings([shell('a', 'true')], { workspace: 'no-such-dir' })).toEqual([['CADRE-E202', 'error', 'workspace']]);
  });

  test('a repository is an error unless a step before may create it', async () => {
    const worktree = { repo: 'repo', task: 't' };
    expect(await findings([{ ...shell('a', 'true'), worktree }])).toEqual([['CADRE-E202', 'error', 'steps[0].worktree.repo']]);
    expect(await findings([shell('init', 'git init -q repo'), { ...shell('a', 'true'), worktree }])).toEqual([['CADRE-E202', 'error', 'steps[1].worktree.repo']]);
    expect(await findings([shell('init', 'git init -q repo'), { ...shell('a', 'true', { dependsOn: ['init'] }), worktree }])).toEqual([['CADRE-E202', 'warning', 'steps[1].worktree.repo']]);
  });

  test("a workspace cloned from a repository, and a worktree of the clone, exist only once a host clones it: not looked for here", async () => {
    const cloned = { workspace: { repo: 'https://example.com/app.git' } };
    // `.` is the clone's, not where cadre runs: here, a folder that is no repository.
    const cwd = process.cwd();
    process.chdir(workspace());
    try {
      expect(await findings([{ ...shell('a', 'true'), worktree: { repo: '.', task: 't' } }], cloned)).toEqual([]);
    } finally {
      process.chdir(cwd);
    }
  });
});

test('a problem is an error unless said otherwise', () => {
  expect(problem('CADRE-E201', 'steps[0].with.command', 'x')).toEqual({ code: 'CADRE-E201', level: 'error', path: 'steps[0].with.command', message: 'x' });
});

describe('the variables a command reads, by the parser', () => {
  test.each([
    ['curl -H "Authorization: $API_TOKEN" ${BASE_URL}/x; echo ${MAYBE:-none} $lower $1', ['API_TOKEN', 'BASE_URL']],
    ['COUNT=3; echo $COUNT; export NAME=x; echo $NAME; for ITEM in a b; do echo $ITEM; done; read -r LINE; echo $LINE', []],
    ["awk '{print $NF}' f; echo '$SINGLE' \\$ESCAPED", []],
    ['echo ${#LENGTH} ${!INDIRECT} ${ALT:+x} ${DEF-x} ${SETS:=1} $SETS', []],
    ['echo ${REQUIRED:?} ${TRIMMED%.txt} "$QUOTED"', ['QUOTED', 'REQUIRED', 'TRIMMED']],
    ["cat <<'EOF'\n$LITERAL\nEOF\ncat <<EOF\n$EXPANDED\nEOF", ['EXPANDED']],
    ['echo $RANDOM $PWD $HOSTNAME $PIPESTATUS', []],
    ['mapfile -t LINES < f; printf -v OUT %s x; getopts ab OPT; local LOCAL; echo $LINES $OUT $OPT $LOCAL', []],
    ['[ -n "$CI" ] && echo "$((COUNT + 1))" $(echo $INNER)', ['CI', 'INNER']],
  ])('%j reads %j', async (command, read) => {
    expect((await variablesOf(command)).read).toEqual(read);
  });

  test("cadre's own and the sandbox's variables need not be set here", async () => {
    expect(await findings([shell('a', 'echo $CADRE_STEP $CADRE_ATTEMPT $UNSET_CADRE_LEVELS $SET_HERE')])).toEqual([['CADRE-E204', 'error', 'steps[0].with.command']]);
    const result = validatePlan({ name: 'levels', steps: [shell('a', 'echo $TMPDIR $HOME $USER')] }, { baseDir: workspace() });
    if (!result.ok) throw new Error(formatIssues(result.issues));
    expect((await environmentProblems(result.plan, { ...probe, env: { PATH: process.env.PATH } })).filter((p) => p.code === 'CADRE-E204')).toEqual([]);
  });
});
