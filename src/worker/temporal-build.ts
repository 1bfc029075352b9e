/**
 * Builds the temporal CLI and the Temporal server's binaries with Go into cadre's cache, from the
 * module in deploy/temporal-build, whose go.mod and go.sum pin both. The CLI embeds the same
 * server, so in one module the binaries share their packages: built there, one after another with
 * Go's build cache, the three take 151 s on 2 cores where two `go install`s side by side, each
 * resolving its own dependency versions, took 277-368 s (docs/operations.md).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { packageRoot } from '../package-root';

export type TemporalBinary = 'temporal' | 'temporal-server' | 'temporal-sql-tool';

/** The CLI's release version, which its own builds stamp in (goreleaser's ldflags); a plain build says 0.0.0-DEV. */
export const TEMPORAL_CLI_VERSION = '1.5.1';

/** Go's packages of the binaries; deploy/temporal-build/tools.go and .ci/run's warm-up name them too (test/unit/temporal-build.test.ts keeps the three lists equal). */
export const PACKAGES: Record<TemporalBinary, string> = {
  temporal: 'github.com/temporalio/cli/cmd/temporal',
  'temporal-server': 'go.temporal.io/server/cmd/server',
  'temporal-sql-tool': 'go.temporal.io/server/cmd/tools/sql',
};

/**
 * The compiler's settings, which .ci/run's warm-up repeats (its packages are then only linked here).
 * No DWARF from the compiler either: the linker drops it (-w), and a cold build took 195 s and 375
 * CPU-seconds on 2 cores where one that made it took 217 s and 418 (docs/testing.md).
 */
export const GO_COMPILE_FLAGS = ['-buildvcs=false', '-gcflags=all=-dwarf=false'] as const;

/**
 * CGO off, the module's pins only, and Go's collector at a quarter of its default pace unless GOGC
 * is set: a cold build of the CLI took 128 s on 2 cores where the default took 146 (244 CPU-seconds
 * against 266), its largest process at 1.4 GB (docs/operations.md). .ci/run's warm-up sets the same.
 */
export function goBuildEnv(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...env, CGO_ENABLED: '0', GOFLAGS: '-mod=readonly', GOGC: env.GOGC || '400' };
}

export function buildModuleDir(): string {
  return path.join(packageRoot(), 'deploy', 'temporal-build');
}

/** Builds run one at a time in a process, the second reusing what the first compiled. */
let queue: Promise<unknown> = Promise.resolve();
/** The build not started yet: a request for the same folder joins it (the CLI's and the server's finders, called together). */
let next: { binaries: Set<TemporalBinary>; bin: string; done: Promise<void> } | undefined;

/** Builds `binaries` into `bin` under their names in Temporal's images; throws with Go's last lines when the build fails. */
export function buildTemporalBinaries(binaries: TemporalBinary[], bin: string, log: (line: string) => void): Promise<void> {
  if (next?.bin === bin) {
    for (const binary of binaries) next.binaries.add(binary);
    return next.done;
  }
  const batch = { binaries: new Set(binaries), bin, done: Promise.resolve() };
  next = batch;
  batch.done = queue
    .then(() => new Promise((resolve) => setImmediate(resolve)))
    .then(() => {
      if (next === batch) next = undefined;
      return goBuild([...batch.binaries], bin, log);
    });
  queue = batch.done.catch(() => undefined);
  return batch.done;
}

async function goBuild(binaries: TemporalBinary[], bin: string, log: (line: string) => void): Promise<void> {
  // go build names binaries after their packages (`server`, `sql`): into a directory of this build's
  // own, then moved into place, so a concurrent build never sees half a file.
  const staging = path.join(bin, `.build-${process.pid}-${Date.now().toString(36)}`);
  mkdirSync(staging, { recursive: true });
  const what = binaries.join(', ');
  log(`building ${what} with Go into ${bin} (first run only, a few minutes)...`);
  const started = Date.now();
  // CGO off; no symbol table or DWARF, which only debuggers read and which take the linker seconds.
  const args = ['build', ...GO_COMPILE_FLAGS, `-ldflags=-s -w -X github.com/temporalio/cli/temporalcli.Version=${TEMPORAL_CLI_VERSION}`, '-o', `${staging}${path.sep}`, ...binaries.map((b) => PACKAGES[b])];
  const child = spawn('go', args, { cwd: buildModuleDir(), env: goBuildEnv(), stdio: ['ignore', 'ignore', 'pipe'] });
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
    if (code !== 0) throw new Error(`go ${args.join(' ')} failed:\n${stderr.split('\n').slice(-15).join('\n')}`);
    for (const binary of binaries) renameSync(path.join(staging, path.basename(PACKAGES[binary])), path.join(bin, binary));
    log(`built ${what} in ${Math.round((Date.now() - started) / 1000)}s`);
  } finally {
    clearInterval(progress);
    rmSync(staging, { recursive: true, force: true });
  }
}
