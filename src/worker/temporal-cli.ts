/**
 * Finds the `temporal` CLI (which embeds the dev server and the Web UI):
 * TEMPORAL_CLI_PATH, then `temporal` on PATH, then cadre's cache, then a build
 * with Go into that cache (temporal-build.ts). Returns undefined when none of these works, so the
 * caller can fall back to the SDK's own download.
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { cacheDir } from '../cache-dir';
import { buildTemporalBinaries } from './temporal-build';

export function cachedCliPath(): string {
  return path.join(cacheDir(), 'bin', 'temporal');
}

export function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (dir && isExecutable(candidate)) return candidate;
  }
  return undefined;
}

export interface FindOptions {
  /** Build with Go when nothing is found (default true). */
  build?: boolean;
  log?: (line: string) => void;
}

export async function findTemporalCli(options: FindOptions = {}): Promise<string | undefined> {
  const log = options.log ?? (() => undefined);
  const explicit = process.env.TEMPORAL_CLI_PATH;
  if (explicit) {
    if (!isExecutable(explicit)) throw new Error(`TEMPORAL_CLI_PATH=${explicit} is not an executable file`);
    return explicit;
  }
  const found = onPath('temporal') ?? (isExecutable(cachedCliPath()) ? cachedCliPath() : undefined);
  if (found) return found;
  if (options.build === false || !goAvailable()) return undefined;
  await buildTemporalBinaries(['temporal'], path.dirname(cachedCliPath()), log);
  return isExecutable(cachedCliPath()) ? cachedCliPath() : undefined;
}

export function goAvailable(): boolean {
  return spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
}
