/** cadre's cache (the temporal CLI and server it built, compiled code): CADRE_CACHE_DIR, else $XDG_CACHE_HOME/cadre or ~/.cache/cadre. */
import os from 'node:os';
import path from 'node:path';

export function cacheDir(): string {
  if (process.env.CADRE_CACHE_DIR) return process.env.CADRE_CACHE_DIR;
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'cadre');
}
