/**
 * A test run's temporary files, in its own folder removed when it ends: the tests and every process
 * they start (`cadre worker`, git, PGlite, Python, Temporal servers) make theirs under TMPDIR, which
 * the workers inherit from the run. Without it a run of `npm test` left about 180 MB in /tmp
 * (databases, repositories, workspaces), and a machine that ran it often filled its disk.
 * CADRE_KEEP_TEST_TMP=1 keeps the folder, to look at after a failure.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Makes the run's folder and sends every temporary file of the run into it; returns the folder. */
export function useRunFolder(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-test-'));
  const tmp = path.join(dir, 'tmp');
  mkdirSync(tmp);
  // As /tmp is: processes of other users reach it (PostgreSQL runs as its own, test/support/postgres.ts).
  chmodSync(dir, 0o711);
  chmodSync(tmp, 0o1777);
  process.env.CADRE_TEST_DIR = dir;
  process.env.TMPDIR = tmp;
  return dir;
}

/** Removes the run's folder, unless CADRE_KEEP_TEST_TMP=1 keeps it. */
export function removeRunFolder(): void {
  const dir = process.env.CADRE_TEST_DIR;
  if (!dir) return;
  if (process.env.CADRE_KEEP_TEST_TMP === '1') {
    process.stderr.write(`the run's temporary files are kept in ${dir}\n`);
    return;
  }
  // A process a test started may still be writing as the run ends: try again rather than leave half.
  rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
}
