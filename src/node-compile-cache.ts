/**
 * Node's own compile cache (`module.enableCompileCache`, Node 22.1 and later) for every `cadre`
 * command and worker: modules load from code V8 compiled before. Node 20 has none and loads as
 * before. The cache is code cadre will run, so it lives in cadre's cache, in a directory of this
 * user's that no one else can write; anything else goes without it.
 */
import { mkdirSync } from 'node:fs';
import Module from 'node:module';
import path from 'node:path';
import { cacheDir } from './cache-dir';
import { ownOnly } from './own-only';

interface WithCompileCache {
  enableCompileCache?: (dir: string) => unknown;
}

/** Turns the cache on where Node has it; answers its directory, or undefined when it stays off. */
export function enableNodeCompileCache(node: WithCompileCache = Module as WithCompileCache): string | undefined {
  if (typeof node.enableCompileCache !== 'function') return undefined;
  const dir = path.join(cacheDir(), 'node-compile-cache');
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!ownOnly(dir)) return undefined;
    node.enableCompileCache(dir);
    return dir;
  } catch {
    // A cache: a read-only home costs each start its compile, nothing else.
    return undefined;
  }
}
