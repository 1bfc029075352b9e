/**
 * Node's compile cache for the CLI (src/node-compile-cache.ts): on where Node has it, in cadre's
 * cache and only in a directory no one else can write; Node 20 has none, and nothing changes.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { enableNodeCompileCache } from '../../src/node-compile-cache';

const before = process.env.CADRE_CACHE_DIR;
afterEach(() => {
  if (before === undefined) delete process.env.CADRE_CACHE_DIR;
  else process.env.CADRE_CACHE_DIR = before;
});

function recorder() {
  const dirs: string[] = [];
  return { dirs, node: { enableCompileCache: (dir: string) => dirs.push(dir) } };
}

test("where Node has it, the cache is turned on in cadre's cache, in a directory only this user can write", () => {
  process.env.CADRE_CACHE_DIR = mkdtempSync(path.join(os.tmpdir(), 'cadre-cache-'));
  const { dirs, node } = recorder();
  const dir = path.join(process.env.CADRE_CACHE_DIR, 'node-compile-cache');
  expect(enableNodeCompileCache(node)).toBe(dir);
  expect(dirs).toEqual([dir]);
  expect(statSync(dir).mode & 0o777).toBe(0o700);
});

test('a cache directory others can write is not used', () => {
  process.env.CADRE_CACHE_DIR = mkdtempSync(path.join(os.tmpdir(), 'cadre-cache-'));
  const dir = path.join(process.env.CADRE_CACHE_DIR, 'node-compile-cache');
  mkdirSync(dir);
  chmodSync(dir, 0o777);
  const { dirs, node } = recorder();
  expect(enableNodeCompileCache(node)).toBeUndefined();
  expect(dirs).toEqual([]);
});

test('a Node without it (20) loads as before', () => {
  process.env.CADRE_CACHE_DIR = mkdtempSync(path.join(os.tmpdir(), 'cadre-cache-'));
  expect(enableNodeCompileCache({})).toBeUndefined();
  expect(existsSync(path.join(process.env.CADRE_CACHE_DIR, 'node-compile-cache'))).toBe(false);
});
