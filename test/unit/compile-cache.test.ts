/**
 * Loading a module through V8's code cache (src/activities/tools/code/compile-cache.ts): compiled
 * without a cache, then from the one it wrote; a cache V8 refuses, or of other bytes, is compiled
 * around and replaced; one others could have written is not read; a directory that cannot be
 * written costs only the cache; later requires get the module loaded this way. Each load in a Node
 * process of its own, as each code thread is: V8 compiles a source it has seen from memory,
 * whatever cache it is given.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TSX } from '../support/tsx';

/** A module of its own, requiring a file beside it. */
function moduleFile(body = 'exports.answer = () => 42;'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-compile-cache-mod-'));
  writeFileSync(path.join(dir, 'dep.js'), 'module.exports = { dep: true };\n');
  const file = path.join(dir, 'lib.js');
  writeFileSync(file, `'use strict';\nconst dep = require('./dep');\nexports.where = [__filename, __dirname];\nexports.dep = dep.dep;\n${body}\n`);
  return file;
}

const LOADER = path.join(__dirname, '../../src/activities/tools/code/compile-cache.ts');

/** Loads `file` through the cache in `dir` in a new Node process, uses it, saves the cache; what it saw. */
function loadInNode(file: string, dir: string) {
  const script = `
    const { requireWithCodeCache } = require(${JSON.stringify(LOADER)});
    const [file, dir] = process.argv.slice(1);
    let loaded;
    try {
      loaded = requireWithCodeCache(file, dir);
    } catch (err) {
      console.log(JSON.stringify({ threw: err.message, kept: file in require.cache }));
      process.exit(0);
    }
    const again = requireWithCodeCache(file, dir);
    const { answer, where, dep } = loaded.exports;
    console.log(JSON.stringify({ cache: loaded.cache, answer: answer(), where, dep, same: require(file) === loaded.exports, again: again.cache, saved: loaded.save(), savedTwice: loaded.save() }));
  `;
  return JSON.parse(execFileSync(process.execPath, ['--import', TSX, '-e', script, file, dir], { encoding: 'utf8' })) as Record<string, unknown>;
}

const cacheFiles = (dir: string) => readdirSync(dir).filter((name) => name.endsWith('.v8'));

describe('loading a module through its code cache', () => {
  test('the first load compiles and writes the cache, the next compiles from it; requires after it get the same module', () => {
    const dir = path.join(mkdtempSync(path.join(os.tmpdir(), 'cadre-compile-cache-')), 'v8');
    const file = moduleFile();
    const works = { answer: 42, where: [file, path.dirname(file)], dep: true, same: true, again: 'loaded', savedTwice: false };
    expect(loadInNode(file, dir)).toEqual({ cache: 'miss', saved: true, ...works });
    const [written] = cacheFiles(dir);
    expect(written).toMatch(/^lib-[0-9a-f]{24}\.v8$/);
    expect(statSync(path.join(dir, written)).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(loadInNode(file, dir)).toEqual({ cache: 'hit', saved: false, ...works });
    expect(cacheFiles(dir)).toEqual([written]);
  }, 30_000);

  test('a cache V8 refuses is compiled around and replaced; other bytes get a cache of their own, and the old one goes', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-compile-cache-'));
    const file = moduleFile();
    loadInNode(file, dir);
    const [written] = cacheFiles(dir);
    const garbage = Buffer.alloc(4096, 7);
    writeFileSync(path.join(dir, written), garbage);
    expect(loadInNode(file, dir)).toMatchObject({ cache: 'rejected', answer: 42, saved: true });
    expect(readFileSync(path.join(dir, written)).equals(garbage)).toBe(false);
    expect(loadInNode(file, dir)).toMatchObject({ cache: 'hit', answer: 42 });

    // Another module's cache is not this one's to tidy.
    const another = `library-${'a'.repeat(24)}.v8`;
    writeFileSync(path.join(dir, another), 'another module');
    writeFileSync(file, readFileSync(file, 'utf8').replace('42', '43'));
    expect(loadInNode(file, dir)).toMatchObject({ cache: 'miss', answer: 43, saved: true });
    const now = cacheFiles(dir);
    expect(now).toHaveLength(2);
    expect(now).toContain(another);
    expect(now).not.toContain(written);
    expect(loadInNode(file, dir)).toMatchObject({ cache: 'hit', answer: 43 });
  }, 30_000);

  test('a cache others could have written is not read: the file or its directory writable by group or others', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-compile-cache-'));
    const file = moduleFile();
    loadInNode(file, dir);
    const [written] = cacheFiles(dir);
    chmodSync(path.join(dir, written), 0o666);
    expect(loadInNode(file, dir)).toMatchObject({ cache: 'miss', answer: 42, saved: true });
    expect(statSync(path.join(dir, written)).mode & 0o777).toBe(0o600);
    expect(loadInNode(file, dir)).toMatchObject({ cache: 'hit' });
    chmodSync(dir, 0o770);
    expect(loadInNode(file, dir)).toMatchObject({ cache: 'miss', answer: 42 });
    chmodSync(dir, 0o755);
    expect(loadInNode(file, dir)).toMatchObject({ cache: 'hit', answer: 42 });
  }, 30_000);

  test('a directory that cannot be written costs the cache only; a module that throws on load throws and is not kept', () => {
    const parent = mkdtempSync(path.join(os.tmpdir(), 'cadre-compile-cache-'));
    writeFileSync(path.join(parent, 'v8'), 'a file where the directory would be');
    expect(loadInNode(moduleFile(), path.join(parent, 'v8'))).toMatchObject({ cache: 'miss', answer: 42, saved: false });
    expect(readdirSync(parent)).toEqual(['v8']);

    const dir = path.join(parent, 'cache');
    mkdirSync(dir);
    expect(loadInNode(moduleFile("throw new Error('broken on load');"), dir)).toEqual({ threw: 'broken on load', kept: false });
  }, 30_000);
});
