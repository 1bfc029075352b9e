import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Role, BUILTIN_ROLES_DIR, RoleError, isBuiltinSource, loadRoles } from '../src/roles/roles';
import { routeTask, stem, suggestRole } from '../src/roles/router';
import { DEFAULT_PROFILE, effectiveProfile } from '../src/sandbox/profile';
import { toEgressPolicy } from '../src/egress/policy';
import { isToolName } from '../src/plan-format/tools';
import { runCadre } from './support/cli';

const BUILTINS = ['architect', 'implementer', 'product', 'researcher', 'reviewer', 'tester'];

const SECURITY = `
name: security
description: Looks for vulnerabilities.
competencies: [security, threat model, secrets, injection]
system: You are the security reviewer.
tools: [fs.read, code.search]
authority: [whether a change is safe to ship]
consultWhen: [a change handles untrusted input]
`;

const STRICT_REVIEWER = `
name: reviewer
description: Our stricter reviewer.
competencies: [review, diff]
system: Review like it is production.
tools: [fs.read, shell]
approvals: { shell: { "git *": allow, "*": deny } }
authority: [approve or request changes]
consultWhen: [before merge]
`;

const tempDirs: string[] = [];
function tempDir(files: Record<string, string> = {}): string {
  // Real paths: the loader resolves symlinks (/tmp on macOS is one).
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'cadre-roles-')));
  tempDirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return dir;
}

/** The environment of a user without role folders of their own. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  if (!('CADRE_ROLES_DIR' in extra)) delete env.CADRE_ROLES_DIR;
  return env;
}

async function loadFailure(files: Record<string, string>): Promise<RoleError> {
  const error = await loadRoles({ dirs: [tempDir(files)] }).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(RoleError);
  return error as RoleError;
}

afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

describe('role files', () => {
  let builtins: Role[];
  beforeAll(async () => {
    builtins = await loadRoles({ dirs: [] });
  });

  test('the six built-in roles load, complete, with tools cadre has', () => {
    expect(builtins.map((r) => r.name)).toEqual(BUILTINS);
    for (const role of builtins) {
      expect(role.source).toBe(path.join(BUILTIN_ROLES_DIR, `${role.name}.yaml`));
      expect(isBuiltinSource(role.source)).toBe(true);
      expect(role.overrides).toBeUndefined();
      expect(role.description).not.toMatch(/\n/);
      expect(role.competencies.length).toBeGreaterThan(5);
      expect(role.system).toMatch(/worktree/);
      for (const tool of ['signal_state', 'ask_question', 'spawn_subtask']) expect(role.system).toContain(tool);
      expect(role.authority.length).toBeGreaterThan(0);
      expect(role.consultWhen.length).toBeGreaterThan(0);
      expect(role.tools.length).toBeGreaterThan(0);
      for (const tool of role.tools) expect(isToolName(tool)).toBe(true);
    }
    const byName = Object.fromEntries(builtins.map((r) => [r.name, r]));
    // Roles that only read must not be able to write or run commands.
    for (const name of ['reviewer', 'researcher', 'product']) {
      expect(byName[name].tools.filter((t) => ['shell', 'fs.write', 'git.commit', 'git.merge', 'git.reset', 'http.request'].includes(t))).toEqual([]);
    }
    expect(byName.researcher.tools).toEqual(expect.arrayContaining(['fs.read', 'code.find_references', 'code.trace_data_flow', 'code.search']));
    for (const name of ['implementer', 'tester']) expect(byName[name].tools).toEqual(['shell', 'fs.read', 'fs.write', 'git.status', 'git.commit']);
  });

  test('CADRE_ROLES_DIR folders override built-ins by name and add new roles', async () => {
    const dir = tempDir({ 'reviewer.yaml': STRICT_REVIEWER, 'security.yml': SECURITY });
    const saved = process.env.CADRE_ROLES_DIR;
    process.env.CADRE_ROLES_DIR = dir;
    try {
      const roles = await loadRoles();
      expect(roles.map((r) => r.name)).toEqual([...BUILTINS, 'security'].sort());
      const reviewer = roles.find((r) => r.name === 'reviewer')!;
      expect(reviewer).toMatchObject({ description: 'Our stricter reviewer.', source: path.join(dir, 'reviewer.yaml'), overrides: path.join(BUILTIN_ROLES_DIR, 'reviewer.yaml') });
      // The shorthand as written (`git *`, `*`), read as prefix rules.
      expect(reviewer.approvals).toEqual({ shell: { rules: [{ prefix: ['git'], decision: 'allow' }], otherwise: 'deny' } });
      expect(roles.find((r) => r.name === 'security')).toMatchObject({ source: path.join(dir, 'security.yml') });
      expect(roles.find((r) => r.name === 'security')!.overrides).toBeUndefined();
    } finally {
      if (saved === undefined) delete process.env.CADRE_ROLES_DIR;
      else process.env.CADRE_ROLES_DIR = saved;
    }
  });

  test('a later user folder overrides an earlier one', async () => {
    const first = tempDir({ 'security.yaml': SECURITY });
    const second = tempDir({ 'security.json': JSON.stringify({ name: 'security', description: 'Second.', competencies: ['audit'], system: 'x', tools: [], authority: [], consultWhen: [] }) });
    const roles = await loadRoles({ dirs: [first, second] });
    expect(roles.find((r) => r.name === 'security')).toMatchObject({ description: 'Second.', overrides: path.join(first, 'security.yaml') });
  });

  test('a bad role file is refused with the file and the path of each problem', async () => {
    const bad = SECURITY.replace('tools: [fs.read, code.search]', 'tools: [fs.read, code.search, fs.delete]').replace('name: security', 'name: secure').concat('color: red\n');
    const error = await loadFailure({ 'security.yaml': bad });
    const file = error.problems[0].file;
    expect(path.basename(file)).toBe('security.yaml');
    expect(error.message.split('\n')).toEqual([
      expect.stringMatching(new RegExp(`^${literal(file)}: tools\\[2\\]: unknown tool "fs\\.delete" \\(known tools: shell, fs\\.read`)),
      `${file}: color: unknown field "color" (fields: name, description, competencies, system, tools, authority, consultWhen, approvals, sandbox, model, budget)`,
    ]);
    // Once the shape is right, the name must match the file.
    const renamed = await loadFailure({ 'security.yaml': SECURITY.replace('name: security', 'name: secure') });
    expect(renamed.message).toMatch(/security\.yaml: name: "secure" differs from the file name "security"/);
  });

  test('every kind of problem in a folder is reported, none skipped', async () => {
    const error = await loadFailure({
      'broken.yaml': 'name: broken\ncompetencies: [a, b\n',
      'empty.yaml': '',
      'notes.txt': 'hello',
      'tester.yaml': STRICT_REVIEWER.replace('name: reviewer', 'name: tester').replace('description: Our stricter reviewer.', 'description: |\n  two\n  lines'),
      'sec.yaml': SECURITY.replace('name: security', 'name: sec').replace('tools: [fs.read, code.search]', 'tools: [fs.read, fs.read]\napprovals: { fs.read: { "*": ask }, shell: deny }'),
    });
    const dir = path.dirname(error.problems[0].file);
    const lines = error.message.split('\n').map((line) => line.split(`${dir}${path.sep}`).join(''));
    expect(lines).toEqual([
      expect.stringMatching(/^broken\.yaml: line \d+: /),
      'empty.yaml: a role is a map with name, description, competencies, system, tools, authority, consultWhen; this file holds nothing',
      'notes.txt: not a role file: a roles folder holds only <name>.yaml, <name>.yml or <name>.json',
      'sec.yaml: tools[1]: "fs.read" is listed twice',
      'sec.yaml: approvals.fs.read: only shell takes command rules; other tools take allow, deny or ask',
      'sec.yaml: approvals.shell: "shell" is not one of the role\'s tools (fs.read, fs.read)',
      'tester.yaml: description: description must be one line',
    ]);
  });

  test("a role's sandbox narrows the run's: variables and hosts both name, the smaller limits; it cannot widen or turn it off", async () => {
    const narrow = SECURITY.concat('sandbox: { env: [KEEP, OTHER], egress: { allow: [api.github.com, evil.example], loopback: [8080] }, limits: { memory: 1GiB, processes: 64 } }\n');
    const [role] = (await loadRoles({ dirs: [tempDir({ 'security.yaml': narrow })] })).filter((r) => r.name === 'security');
    expect(role.sandbox).toEqual({ env: ['KEEP', 'OTHER'], egress: { allow: ['api.github.com', 'evil.example'], loopback: [8080], addresses: [] }, limits: { memoryBytes: 1024 ** 3, processes: 64 } });
    const run = { env: ['KEEP', 'DROP'], egress: toEgressPolicy({ allow: ['api.github.com', 'registry.npmjs.org'], loopback: [8080, 9090] }), limits: { processes: 256 } };
    const profile = effectiveProfile(DEFAULT_PROFILE, { ...run, within: [role.sandbox ?? {}] });
    expect(profile).toMatchObject({ mode: 'bubblewrap', env: ['KEEP'], egress: { allow: ['api.github.com'], loopback: [8080], addresses: [] } });
    expect(profile.limits).toMatchObject({ processes: 64, memoryBytes: 1024 ** 3, openFiles: DEFAULT_PROFILE.limits.openFiles });
    // A later narrowing (a subtask's role) narrows again; an egress of none shuts every host.
    const shut = effectiveProfile(DEFAULT_PROFILE, { ...run, within: [role.sandbox ?? {}, { egress: toEgressPolicy({}), limits: { processes: 512 } }] });
    expect(shut).toMatchObject({ env: ['KEEP'], egress: { allow: [], loopback: [] }, limits: { processes: 64 } });
    // Nothing to turn the sandbox off or open a path: those belong to the plan and the worker.
    for (const [sandbox, message] of [
      ['none', "a role's sandbox is { env, egress, limits }"],
      ['{ read: [/srv] }', 'unknown field "read"'],
      ['{ mode: none }', 'unknown field "mode"'],
      ['{ egress: everything }', 'egress is "none" or { allow, loopback, addresses }'],
    ]) {
      const error = await loadFailure({ 'security.yaml': SECURITY.concat(`sandbox: ${sandbox}\n`) });
      expect(error.message).toContain(message);
    }
  });

  test('a CADRE_ROLES_DIR folder that does not exist is an error', async () => {
    const missing = path.join(tempDir(), 'nope');
    await expect(loadRoles({ dirs: [missing] })).rejects.toThrow(`${missing}: cannot read the roles folder: no such file or folder`);
  });
});

describe('routing a task to a role', () => {
  let roles: Role[];
  beforeAll(async () => {
    roles = await loadRoles({ dirs: [] });
  });

  test.each([
    ['Design the module boundaries for the payment service', 'architect'],
    ['Propose an interface and data model for the plugin API', 'architect'],
    ['Write unit tests for the parser edge cases', 'tester'],
    ['Add integration tests that reproduce the flaky timeout', 'tester'],
    ['Find where totalArea is called', 'researcher'],
    ['Investigate how the session workflow handles continue-as-new', 'researcher'],
    ['Review the diff for bugs', 'reviewer'],
    ['Check the pull request for security issues before merge', 'reviewer'],
    ['Decide the scope of the MVP and the acceptance criteria', 'product'],
    ['Write the user stories and priorities for the next release', 'product'],
    ['Implement the retry option in the HTTP client', 'implementer'],
    ['Refactor the config loader and fix the off-by-one bug', 'implementer'],
  ])('%s -> %s', (task, expected) => {
    expect(routeTask(task, roles)).toBe(expected);
    expect(suggestRole(task, roles)[0].role).toBe(expected);
  });

  test('nothing in common: the fallback', () => {
    expect(suggestRole('water the plants', roles)).toEqual([]);
    expect(routeTask('water the plants', roles)).toBe('implementer');
    expect(routeTask('water the plants', roles, 'product')).toBe('product');
  });

  test('scores say what matched; ties go by name', () => {
    expect(suggestRole('Review the diff for bugs', roles)).toEqual([
      { role: 'reviewer', score: 6, matched: ['review', 'diff', 'bugs'] },
      { role: 'implementer', score: 2, matched: ['bugs'] },
      { role: 'tester', score: 2, matched: ['bugs'] },
    ]);
    expect(suggestRole('Design the module boundaries', roles)[0]).toEqual({ role: 'architect', score: 7, matched: ['module boundaries', 'design'] });
    const twins = ['b', 'a'].map((name) => ({ ...roles[0], name, competencies: ['parsing'], description: 'x' }));
    expect(suggestRole('parse it', twins).map((s) => s.role)).toEqual(['a', 'b']);
  });

  test('stemming meets word forms halfway', () => {
    expect(['test', 'tests', 'tested', 'testing'].map(stem)).toEqual(['test', 'test', 'test', 'test']);
    expect(['write', 'writing', 'writes'].map(stem)).toEqual(['writ', 'writ', 'writ']);
    expect(['boundary', 'boundaries', 'fix', 'fixes', 'add', 'added', 'running', 'run'].map(stem)).toEqual(['boundary', 'boundary', 'fix', 'fix', 'add', 'add', 'run', 'run']);
  });
});

describe('cadre roles', () => {
  test('lists the built-in roles, and user roles with what they override', async () => {
    const cwd = tempDir();
    const listed = await runCadre(['roles'], cwd, cleanEnv());
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^NAME +TOOLS +COMPETENCIES +SOURCE$/);
    expect(lines.slice(1).map((line) => line.split(/\s+/)[0])).toEqual(BUILTINS);
    expect(lines[1]).toMatch(/^architect +8 +design, architecture, .*built-in$/);

    mkdirSync(path.join(cwd, 'roles'));
    writeFileSync(path.join(cwd, 'roles', 'reviewer.yaml'), STRICT_REVIEWER);
    const extra = tempDir({ 'security.yaml': SECURITY });
    const mine = await runCadre(['roles'], cwd, cleanEnv({ CADRE_ROLES_DIR: extra }));
    expect(mine.code).toBe(0);
    expect(mine.stdout).toMatch(/^reviewer +2 +review, diff +roles\/reviewer\.yaml \(overrides built-in\)$/m);
    expect(mine.stdout).toContain(`${path.join(extra, 'security.yaml')}\n`);

    const json = await runCadre(['roles', '--json'], cwd, cleanEnv());
    expect((JSON.parse(json.stdout) as Role[]).find((r) => r.name === 'reviewer')).toMatchObject({ tools: ['fs.read', 'shell'], overrides: path.join(BUILTIN_ROLES_DIR, 'reviewer.yaml') });
  });

  test('ranks the roles for a task', async () => {
    const result = await runCadre(['roles', 'write', 'tests', 'for', 'the', 'parser'], tempDir(), cleanEnv());
    expect(result.code).toBe(0);
    expect(result.stdout.split('\n')[0]).toMatch(/^tester +score \d+ +matched: .*tests/);
  });

  test('bad role files: every problem on stderr, exit code 1', async () => {
    const dir = tempDir({ 'x.yaml': SECURITY.replace('name: security', 'name: x').replace('code.search', 'fs.delete') });
    const result = await runCadre(['roles'], tempDir(), cleanEnv({ CADRE_ROLES_DIR: dir }));
    expect(result).toMatchObject({ code: 1, stdout: '' });
    expect(result.stderr).toMatch(new RegExp(`^${literal(path.join(dir, 'x.yaml'))}: tools\\[1\\]: unknown tool "fs.delete"`));
  });
});

function literal(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
