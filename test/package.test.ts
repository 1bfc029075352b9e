/**
 * What a user of the package gets: the tarball's files, the public API the README and
 * docs/protocol.md use, and one version of every @temporalio package.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';

const ROOT = path.join(__dirname, '..');
const run = promisify(execFile);

/** Every name src/index.ts exports, values and types. */
function publicNames(): Set<string> {
  const program = ts.createProgram([path.join(ROOT, 'src', 'index.ts')], { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, strict: true });
  const checker = program.getTypeChecker();
  const module = checker.getSymbolAtLocation(program.getSourceFile(path.join(ROOT, 'src', 'index.ts'))!)!;
  return new Set(checker.getExportsOfModule(module).map((symbol) => symbol.getName()));
}

test('everything the README imports from cadre, and the protocol definitions, are exported', () => {
  const names = publicNames();
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const imported = [...readme.matchAll(/import\s+(?:type\s+)?\{([^}]+)\}\s+from\s+'cadre'/g)].flatMap((m) => m[1].split(',').map((n) => n.replace(/^\s*type\s+/, '').trim()));
  expect(imported.length).toBeGreaterThan(2);
  const protocol = ['diagnosticsQuery', 'answerUpdate', 'pauseUpdate', 'resumeUpdate', 'answerSignal', 'approveSignal', 'pauseSignal', 'resumeSignal', 'CadreStatus', 'CadrePlan', 'CadreWorkerState', 'SEARCH_ATTRIBUTES'];
  const types = ['Diagnostics', 'PlanResult', 'Waiting', 'Answer', 'StepRecord', 'WorkerRecord', 'ConsultationRecord', 'PlanDocumentInput', 'CompiledPlan', 'RunStatus'];
  expect([...imported, ...protocol, ...types].filter((name) => !names.has(name))).toEqual([]);
});

test('the tarball holds the CLI, the compiled code, roles, examples and docs, and no tests or sources', async () => {
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  const files = (JSON.parse(stdout) as { files: { path: string }[] }[])[0].files.map((f) => f.path);
  for (const needed of ['bin/cadre.js', 'dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/client/cli.js', 'dist/src/workflows/index.js', 'roles/architect.yaml', 'examples/email-triage/plan.yaml', 'examples/clients/run_plan.py', 'docs/protocol.md', 'README.md', 'package.json']) {
    expect(files).toContain(needed);
  }
  expect(files.filter((f) => /^(test|bench|src|dist\/test|dist\/bench|\.ci)\//.test(f) || f.includes('__pycache__'))).toEqual([]);
});

test('one version of every @temporalio package; the testing package only for development', async () => {
  const { stdout } = await run('npm', ['ls', '--all', '--json'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  const versions = new Map<string, Set<string>>();
  const walk = (deps: Record<string, { version?: string; dependencies?: Record<string, unknown> }> = {}) => {
    for (const [name, info] of Object.entries(deps)) {
      if (name.startsWith('@temporalio/') && info.version) versions.set(name, (versions.get(name) ?? new Set()).add(info.version));
      walk(info.dependencies as never);
    }
  };
  walk(JSON.parse(stdout).dependencies);
  expect(versions.size).toBeGreaterThan(5);
  expect([...versions].filter(([, v]) => v.size > 1).map(([name, v]) => `${name}: ${[...v].join(', ')}`)).toEqual([]);
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  expect(Object.keys(pkg.dependencies)).not.toContain('@temporalio/testing');
  const { stdout: prod } = await run('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 }).catch((err) => err);
  expect(String(prod)).not.toMatch(/node_modules\/@temporalio\/testing$/m);
});
