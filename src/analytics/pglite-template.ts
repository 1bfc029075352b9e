/**
 * A new embedded database starts as a copy of an empty one, made once for each PGlite version in
 * cadre's cache: PGlite runs initdb in WebAssembly, about 6 s of CPU (3.6 s of wall time), where
 * copying the empty cluster's files and opening the copy take about 2 s (docs/operations.md,
 * cadre's cache). A copy of a cluster that was shut down cleanly is the same cluster, as a file-level
 * backup is. Anything that goes wrong here leaves the database to PGlite's own initdb.
 */
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { cacheDir } from '../cache-dir';
import { ownOnly } from '../own-only';
import { leftByEndedProcess } from '../process-alive';

type PGliteClass = typeof import('@electric-sql/pglite').PGlite;

/** Fills the missing `dataDir` with a copy of the template (made first if need be); when it cannot, PGlite's initdb will. */
export async function seedDataDir(dataDir: string, PGlite: PGliteClass): Promise<void> {
  const copy = `${dataDir}.seed-${process.pid}`;
  try {
    await removeAbandoned(dataDir, 'seed');
    const template = await emptyCluster(PGlite);
    await cp(template, copy, { recursive: true });
    await rename(copy, dataDir);
  } catch {
    await rm(copy, { recursive: true, force: true });
  }
}

/** Where the empty cluster of the installed PGlite version is kept in the cache `cache`. */
export function templateDir(cache = cacheDir()): string {
  return path.join(cache, 'pglite', pgliteVersion(), 'pgdata');
}

/** The empty cluster of this PGlite version, made on first use; one another user could have written is not used. */
async function emptyCluster(PGlite: PGliteClass): Promise<string> {
  const template = templateDir();
  // Swept whether or not the template is made now: one made by another process meanwhile leaves it made for good.
  await removeAbandoned(template, 'making');
  if (existsSync(template)) {
    if (ownOnly(template) && ownOnly(path.dirname(template))) return template;
    throw new Error(`${template} is not this user's alone`);
  }
  await mkdir(path.dirname(template), { recursive: true, mode: 0o700 });
  // Made aside and renamed into place once shut down: a process that dies meanwhile leaves no half cluster.
  const making = `${template}.making-${process.pid}`;
  try {
    await (await PGlite.create(making)).close();
  } catch (err) {
    await rm(making, { recursive: true, force: true });
    throw err;
  }
  try {
    await rename(making, template);
  } catch (err) {
    // Another process made it first.
    await rm(making, { recursive: true, force: true });
    if (!existsSync(template)) throw err;
  }
  return template;
}

/** Removes what processes killed while making `target` aside left there (`<target>.<what>-<pid>`, that pid gone), and this process's own. */
async function removeAbandoned(target: string, what: 'making' | 'seed'): Promise<void> {
  const prefix = `${path.basename(target)}.${what}-`;
  const entries = await readdir(path.dirname(target)).catch(() => []);
  for (const entry of entries) {
    if (entry === `${prefix}${process.pid}` || leftByEndedProcess(entry, prefix)) {
      await rm(path.join(path.dirname(target), entry), { recursive: true, force: true });
    }
  }
}

function pgliteVersion(): string {
  const manifest = path.join(path.dirname(require.resolve('@electric-sql/pglite')), '..', 'package.json');
  const { version } = JSON.parse(readFileSync(manifest, 'utf8')) as { version?: unknown };
  if (typeof version !== 'string' || !/^[\w.+-]+$/.test(version)) throw new Error(`no version in ${manifest}`);
  return version;
}
