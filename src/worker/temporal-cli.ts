/**
 * Finds the `temporal` CLI (which embeds the dev server and the Web UI):
 * TEMPORAL_CLI_PATH, then `temporal` on PATH, then cadre's cache, then a build
 * with Go into that cache. Returns undefined when none of these works, so the
 * caller can fall back to the SDK's own download.
 */
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, mkdirSync } from 'node:fs';
import path from 'node:path';
import { cacheDir } from '../cache-dir';

/** Newer tags carry a `replace` directive that `go install` refuses. */
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

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
  log(`building the temporal CLI with Go into ${path.dirname(cachedCliPath())} (first run only, a few minutes)...`);
  await buildWithGo(log);
  return isExecutable(cachedCliPath()) ? cachedCliPath() : undefined;
}

export function goAvailable(): boolean {
  return spawnSync('go', ['version'], { stdio: 'ignore' }).status === 0;
}

async function buildWithGo(log: (line: string) => void): Promise<void> {
  await goInstall([TEMPORAL_CLI_MODULE], path.dirname(cachedCliPath()), 'the temporal CLI', log);
}

/**
 * `go install` of `modules` into `bin` (CGO off; no symbol table or DWARF, which only debuggers
 * read and which take the linker seconds), with a progress line every 30 s while it builds.
 */
export async function goInstall(modules: string[], bin: string, what: string, log: (line: string) => void): Promise<void> {
  mkdirSync(bin, { recursive: true });
  const started = Date.now();
  const child = spawn('go', ['install', '-ldflags=-s -w', ...modules], {
    env: { ...process.env, CGO_ENABLED: '0', GOBIN: bin },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const progress = setInterval(() => log(`  still building ${what} (${Math.round((Date.now() - started) / 1000)}s)`), 30_000);
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      child.on('error', reject);
      child.on('close', resolve);
    });
    if (code !== 0) throw new Error(`go install ${modules.join(' ')} failed:\n${stderr.split('\n').slice(-15).join('\n')}`);
    log(`built ${what} in ${Math.round((Date.now() - started) / 1000)}s`);
  } finally {
    clearInterval(progress);
  }
}
