/**
 * The compiled cadre the CLI tests run (bin/cadre.js, as a user does), built when any source is
 * newer than the last build: a test run from a fresh `npm ci` builds nothing, an edited source
 * rebuilds before any test starts. Compiled, a CLI call costs half the CPU of one through tsx, and
 * a worker process (./worker-process.ts) starts in half the time.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const STAMP = path.join(ROOT, 'dist', '.tsbuildinfo');

export function ensureBuilt(log: (line: string) => void): void {
  const built = existsSync(STAMP) ? statSync(STAMP).mtimeMs : 0;
  const changed = ['src', 'bench', 'test/support'].flatMap((dir) => newerThan(path.join(ROOT, dir), built));
  if (built > 0 && changed.length === 0 && existsSync(path.join(ROOT, 'dist', 'workflow-bundle.js'))) return;
  const started = Date.now();
  log(`building dist/ for the CLI tests (${built === 0 ? 'no build yet' : `${changed.length} sources changed since the last build, e.g. ${path.relative(ROOT, changed[0])}`})...`);
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(ROOT, 'tsconfig.build.json')], { cwd: ROOT, stdio: 'inherit' });
  execFileSync(process.execPath, [path.join(ROOT, 'dist', 'src', 'worker', 'bundle-main.js')], { cwd: ROOT, stdio: 'inherit' });
  log(`built in ${Date.now() - started} ms`);
}

function newerThan(dir: string, time: number): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) return newerThan(file, time);
    return entry.name.endsWith('.ts') && statSync(file).mtimeMs > time ? [file] : [];
  });
}
