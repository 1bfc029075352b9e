/**
 * A new embedded analytics database is a copy of one empty cluster kept in cadre's cache (PGlite's
 * initdb costs seconds of CPU). A copy is the same cluster: its pg_control holds the template's
 * system identifier, which every initdb draws afresh. A template another user could have written
 * is not used: the database is then made by initdb, and works all the same.
 */
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { templateDir } from '../../src/analytics/pglite-template';
import { TSX } from '../support/tsx';

jest.setTimeout(120_000);

const exec = promisify(execFile);

/** pg_control's first 8 bytes. */
const systemIdentifier = (dataDir: string) => readFileSync(path.join(dataDir, 'global', 'pg_control')).subarray(0, 8).toString('hex');

/** Creates a database in each folder, in a process of its own; their clusters' system identifiers. */
async function create(dirs: string[], env: NodeJS.ProcessEnv = {}): Promise<string[]> {
  await exec(process.execPath, ['--import', TSX, path.join(__dirname, '..', 'support', 'analytics-open.ts'), ...dirs], { env: { ...process.env, ...env } });
  return dirs.map((dir) => systemIdentifier(path.join(dir, 'pgdata')));
}

const fresh = () => mkdtempSync(path.join(os.tmpdir(), 'cadre-analytics-'));

// In the cache every test run shares: the analytics tests' databases come from the same template.
test('two new databases are copies of the one empty cluster in the cache', async () => {
  const [first, second] = await create([fresh(), fresh()]);
  expect(first).toBe(systemIdentifier(templateDir()));
  expect(second).toBe(first);
});

test('a template others could write is not used: initdb makes the database', async () => {
  const [shared] = await create([fresh()]);
  // A real cluster, the shared one, made writable by others: were it used, the copy would be that cluster.
  const cache = mkdtempSync(path.join(os.tmpdir(), 'cadre-cache-'));
  const template = templateDir(cache);
  mkdirSync(path.dirname(template), { recursive: true, mode: 0o700 });
  cpSync(templateDir(), template, { recursive: true });
  chmodSync(template, 0o777);
  const [own] = await create([fresh()], { CADRE_CACHE_DIR: cache });
  expect(own).toMatch(/^[0-9a-f]{16}$/);
  expect(own).not.toBe(shared);
});

test('what a killed process left while making the template or a copy is removed; what a running one is making stays', async () => {
  const template = templateDir();
  const dir = fresh();
  // A process that has exited: its pid is no one's now.
  const dead = spawnSync(process.execPath, ['-e', '']).pid;
  const left = [`${template}.making-${dead}`, path.join(dir, `pgdata.seed-${dead}`)];
  const live = `${template}.making-${process.pid}`;
  try {
    for (const folder of [...left, live]) mkdirSync(path.join(folder, 'base'), { recursive: true });
    const [made] = await create([dir]);
    expect(made).toBe(systemIdentifier(template));
    expect(left.filter((folder) => existsSync(folder))).toEqual([]);
    expect(existsSync(live)).toBe(true);
  } finally {
    rmSync(live, { recursive: true, force: true });
  }
});
