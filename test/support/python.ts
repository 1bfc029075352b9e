/**
 * A Python with Temporal's SDK, for tests that drive cadre from another language: a virtual
 * environment in cadre's cache (~/.cache/cadre), made with python3 and pip on first use.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { cacheDir } from '../../src/cache-dir';

/** Pinned, as package-lock.json pins the TypeScript side. */
export const PYTHON_TEMPORALIO = '1.35.0';

export async function pythonWithTemporal(log: (line: string) => void = () => {}): Promise<string> {
  const venv = path.join(cacheDir(), `python-temporalio-${PYTHON_TEMPORALIO}`);
  const python = path.join(venv, 'bin', 'python');
  const run = promisify(execFile);
  if (existsSync(python)) {
    const check = await run(python, ['-c', 'import temporalio; print(temporalio.__version__)']).catch(() => undefined);
    if (check?.stdout.trim() === PYTHON_TEMPORALIO) return python;
  }
  log(`making a Python environment with temporalio ${PYTHON_TEMPORALIO} in ${venv}`);
  try {
    await run('python3', ['-m', 'venv', '--clear', venv]);
    await run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', `temporalio==${PYTHON_TEMPORALIO}`], { timeout: 300_000 });
  } catch (err) {
    throw new Error(`cannot make a Python environment with temporalio (needs python3 with venv and pip, and PyPI): ${(err as Error).message}`);
  }
  return python;
}
