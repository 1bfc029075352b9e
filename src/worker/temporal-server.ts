/**
 * Finds the real Temporal server (not the CLI's dev server) and `temporal-sql-tool`, which sets up
 * its schemas on PostgreSQL or MySQL: the version of docker-compose.yml's temporalio/auto-setup
 * image, for running the production topology without Docker (test/production-shape.test.ts).
 * TEMPORAL_SERVER_PATH / TEMPORAL_SQL_TOOL_PATH, then `temporal-server` / `temporal-sql-tool` on
 * PATH (their names in Temporal's images), then cadre's cache, then a build with Go into that
 * cache (temporal-build.ts, from the Go module proxy: a few minutes, once). Found binaries must report
 * the expected version, so a cache from another version is rebuilt.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { cacheDir } from '../cache-dir';
import { buildTemporalBinaries } from './temporal-build';
import { type FindOptions, goAvailable, isExecutable, onPath } from './temporal-cli';

/** docker-compose.yml runs temporalio/auto-setup:1.29.1. */
export const TEMPORAL_SERVER_VERSION = '1.29.1';

interface Binary {
  /** Its name in cadre's cache and in Temporal's images. */
  name: 'temporal-server' | 'temporal-sql-tool';
  env: string;
}

const SERVER: Binary = { name: 'temporal-server', env: 'TEMPORAL_SERVER_PATH' };
const SQL_TOOL: Binary = { name: 'temporal-sql-tool', env: 'TEMPORAL_SQL_TOOL_PATH' };

export interface TemporalServerBinaries {
  /** `temporal-server --root <dir> --config <dir> --env <name> start`. */
  server: string;
  /** `temporal-sql-tool --plugin postgres12 ... create-database | setup-schema | update-schema`. */
  sqlTool: string;
}

export function cachedBinaryPath(name: Binary['name']): string {
  return path.join(cacheDir(), 'bin', name);
}

/** `temporal version 1.29.1` / `temporal-sql-tool version 1.29.1` → `1.29.1`. */
function versionOf(file: string): string | undefined {
  const result = spawnSync(file, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  return /version (\S+)/.exec(result.stdout ?? '')?.[1];
}

function find(binary: Binary): string | undefined {
  const explicit = process.env[binary.env];
  if (explicit) {
    if (!isExecutable(explicit)) throw new Error(`${binary.env}=${explicit} is not an executable file`);
    return explicit;
  }
  for (const candidate of [onPath(binary.name), cachedBinaryPath(binary.name)]) {
    if (candidate && isExecutable(candidate) && versionOf(candidate) === TEMPORAL_SERVER_VERSION) return candidate;
  }
  return undefined;
}

/**
 * The server and the SQL tool, built with Go when missing (unless `build: false`); undefined when
 * one is missing and cannot be built (no Go). A failed build throws, with Go's last lines.
 */
export async function findTemporalServer(options: FindOptions = {}): Promise<TemporalServerBinaries | undefined> {
  const log = options.log ?? (() => undefined);
  let server = find(SERVER);
  let sqlTool = find(SQL_TOOL);
  if (server && sqlTool) return { server, sqlTool };
  if (options.build === false || !goAvailable()) return undefined;
  const missing = [server ? undefined : SERVER, sqlTool ? undefined : SQL_TOOL].filter((b): b is Binary => b !== undefined);
  await buildTemporalBinaries(missing.map((b) => b.name), path.dirname(cachedBinaryPath(SERVER.name)), log);
  server ??= find(SERVER);
  sqlTool ??= find(SQL_TOOL);
  return server && sqlTool ? { server, sqlTool } : undefined;
}
