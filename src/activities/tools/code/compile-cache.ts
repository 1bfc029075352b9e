/**
 * Loads a CommonJS module with V8's code cache (Node's vm API) kept in cadre's cache: TypeScript's
 * 9 MB compiler takes ~250 ms to load in a fresh code thread and ~80 ms with its cache, and the
 * cache taken after a first build also holds the parser's and checker's functions that build
 * compiled. Node 22's module.enableCompileCache() does this for every module; Node 20 has none.
 *
 * The cache file is named by a hash of the module's bytes, Node's version and flags: another
 * TypeScript, or a Node whose V8 would read it differently, never meets it. V8 checks it too and
 * rejects one it cannot use, which is then compiled as without and written again. A cache is code
 * this process will run: it is read only from a file and directory of this user's that no one else
 * can write (the cache sits beside the temporal binary cadre runs; sandboxed commands do not see it).
 */
import { createHash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import Module, { createRequire } from 'node:module';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import vm from 'node:vm';
import { ownOnly } from '../../../own-only';

/** hit: compiled from the cache; miss: no cache yet; rejected: V8 refused the cache; loaded: an earlier require had loaded it. */
export type CodeCacheUse = 'hit' | 'miss' | 'rejected' | 'loaded';

export interface CachedModule {
  exports: unknown;
  cache: CodeCacheUse;
  /** Its load, cache read and compile included. */
  loadMs: number;
  /** Writes the cache (once, unless it was a hit): call after the module's first real use, so it holds what that compiled. Answers whether it wrote. */
  save(): boolean;
}

/** The same (exports, require, module, __filename, __dirname) function Node wraps a module in, on one line so lines keep their numbers. */
const wrap = (source: string) => `(function (exports, require, module, __filename, __dirname) { ${source.startsWith('#!') ? `//${source}` : source}\n});`;

/**
 * Requires `id` (resolved from here) through the code cache in `dir`: later `require(id)`s, e.g.
 * `import ts from 'typescript'`, get this module.
 */
export function requireWithCodeCache(id: string, dir: string): CachedModule {
  const started = performance.now();
  const filename = require.resolve(id);
  const loaded = require.cache[filename];
  if (loaded) return { exports: loaded.exports, cache: 'loaded', loadMs: 0, save: () => false };
  const bytes = readFileSync(filename);
  const name = path.basename(filename, '.js');
  const file = path.join(dir, `${name}-${cacheKey(bytes)}.v8`);
  const cachedData = readIfThere(file);
  const script = new vm.Script(wrap(bytes.toString('utf8')), { filename, cachedData });
  const cache: CodeCacheUse = cachedData === undefined ? 'miss' : script.cachedDataRejected ? 'rejected' : 'hit';
  const record = new Module(filename);
  record.filename = filename;
  require.cache[filename] = record;
  try {
    (script.runInThisContext() as (...args: unknown[]) => void).call(record.exports, record.exports, createRequire(filename), record, filename, path.dirname(filename));
  } catch (err) {
    delete require.cache[filename];
    throw err;
  }
  record.loaded = true;
  let saved = cache === 'hit';
  return {
    exports: record.exports,
    cache,
    loadMs: performance.now() - started,
    save: () => {
      if (saved) return false;
      saved = true;
      return write(dir, file, name, () => script.createCachedData());
    },
  };
}

function cacheKey(bytes: Buffer): string {
  return createHash('sha256')
    .update(bytes)
    .update(`\0${process.version}\0${process.arch}\0${process.execArgv.join(' ')}\0${process.env.NODE_OPTIONS ?? ''}`)
    .digest('hex')
    .slice(0, 24);
}

function readIfThere(file: string): Buffer | undefined {
  try {
    if (!ownOnly(path.dirname(file))) return undefined;
    const fd = openSync(file, 'r');
    try {
      return ownOnly(fd) ? readFileSync(fd) : undefined;
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/** Whole or not at all (a temporary file renamed over it: processes and threads may write at once); older caches of the module go. */
function write(dir: string, file: string, name: string, data: () => Buffer): boolean {
  const temporary = `${file}.${process.pid}.${threadId}.tmp`;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(temporary, data(), { mode: 0o600 });
    renameSync(temporary, file);
  } catch {
    // A cache: a read-only or full disk (or a V8 that cannot serialize) costs the next start its compile, nothing else.
    attempt(() => rmSync(temporary, { force: true }));
    return false;
  }
  const older = new RegExp(`^${name.replace(/\W/g, '\\$&')}-[0-9a-f]{24}\\.v8$`);
  attempt(() => {
    for (const entry of readdirSync(dir)) if (older.test(entry) && path.join(dir, entry) !== file) rmSync(path.join(dir, entry), { force: true });
  });
  return true;
}

function attempt(action: () => void): void {
  try {
    action();
  } catch {
    // Left for the next write to tidy.
  }
}
