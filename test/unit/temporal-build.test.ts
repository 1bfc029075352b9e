/**
 * The Go build of the temporal CLI and the server (src/worker/temporal-build.ts), with a stand-in
 * `go` on PATH that records how it was called and writes the binaries `go build -o` would: the
 * CLI's and the server's finders asked together make one build of all three, in the pinned module,
 * and the binaries land under Temporal's names. The real build runs in CI on a fresh machine.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PACKAGES, buildModuleDir, buildTemporalBinaries, GO_COMPILE_FLAGS, goBuildEnv } from '../../src/worker/temporal-build';

const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-temporal-build-'));
const calls = path.join(dir, 'calls.jsonl');
const fakeBin = path.join(dir, 'fake-bin');
const PATH = process.env.PATH;

beforeAll(() => {
  mkdirSync(fakeBin);
  // Each call: its working directory and arguments; then one file per package into the -o folder (or a failure).
  const go = `#!/usr/bin/env node
const fs = require('node:fs');
const args = process.argv.slice(2);
fs.appendFileSync(${JSON.stringify(calls)}, JSON.stringify({ cwd: process.cwd(), args, cgo: process.env.CGO_ENABLED, gogc: process.env.GOGC }) + '\\n');
if (process.env.FAKE_GO_FAILS) { console.error('go: downloading go.temporal.io/server v1.29.1\\nverifying module: checksum mismatch'); process.exit(1); }
const out = args[args.indexOf('-o') + 1];
for (const pkg of args.slice(args.indexOf('-o') + 2)) fs.writeFileSync(out + pkg.split('/').pop(), 'binary of ' + pkg);
`;
  writeFileSync(path.join(fakeBin, 'go'), go);
  chmodSync(path.join(fakeBin, 'go'), 0o755);
  process.env.PATH = `${fakeBin}${path.delimiter}${PATH}`;
});
afterAll(() => {
  process.env.PATH = PATH;
});

type GoCall = { cwd: string; args: string[]; cgo: string; gogc?: string };

function recorded(): GoCall[] {
  return existsSync(calls) ? readFileSync(calls, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as GoCall) : [];
}

test('the module pins the CLI and the server it embeds, and names the three packages', () => {
  const goMod = readFileSync(path.join(buildModuleDir(), 'go.mod'), 'utf8');
  expect(goMod).toMatch(/^\s+github\.com\/temporalio\/cli v1\.5\.1$/m);
  expect(goMod).toMatch(/^\s+go\.temporal\.io\/server v1\.29\.1$/m);
  expect(readFileSync(path.join(buildModuleDir(), 'go.sum'), 'utf8')).toContain('github.com/temporalio/cli v1.5.1 h1:');
});

test("the module's tools.go and .ci/run's warm-up name the packages the build builds", () => {
  const built = Object.values(PACKAGES).sort();
  // tools.go keeps them in go.mod (`go mod tidy`); .ci/run compiles them while `npm ci` runs, before this module can be loaded.
  const imported = [...readFileSync(path.join(buildModuleDir(), 'tools.go'), 'utf8').matchAll(/^\s+_ "([^"]+)"$/gm)].map((m) => m[1]);
  expect(imported.sort()).toEqual(built);
  const ciRun = readFileSync(path.join(buildModuleDir(), '..', '..', '.ci', 'run'), 'utf8');
  const warm = /go build ((?:-\S+ )+)\\\n\s+(.+?)\) >/.exec(ciRun);
  expect(warm?.[2].split(/\s+/).sort()).toEqual(built);
  // With the build's compiler flags: other flags would compile everything again.
  expect(warm?.[1].trim().split(' ')).toEqual(GO_COMPILE_FLAGS);
  // With the build's settings: CGO and the module's pins decide what is compiled (the build then only links), GOGC how fast.
  const settings = goBuildEnv({});
  expect(ciRun).toContain(`CGO_ENABLED=${settings.CGO_ENABLED} GOFLAGS=${settings.GOFLAGS} GOGC="\${GOGC:-${settings.GOGC}}" exec go build`);
});

test('asked for together, the CLI and the server binaries are one go build in the pinned module, placed under their names', async () => {
  const bin = path.join(dir, 'bin');
  const lines: string[] = [];
  await Promise.all([
    buildTemporalBinaries(['temporal'], bin, (line) => lines.push(line)),
    buildTemporalBinaries(['temporal-server', 'temporal-sql-tool'], bin, (line) => lines.push(line)),
  ]);
  const [call, ...more] = recorded();
  expect(more).toEqual([]);
  expect(call.cwd).toBe(buildModuleDir());
  expect(call.cgo).toBe('0');
  expect(call.gogc).toBe(process.env.GOGC || '400');
  expect(call.args.slice(0, 4)).toEqual(['build', '-buildvcs=false', '-gcflags=all=-dwarf=false', '-ldflags=-s -w -X github.com/temporalio/cli/temporalcli.Version=1.5.1']);
  expect(call.args.slice(call.args.indexOf('-o') + 2)).toEqual(['github.com/temporalio/cli/cmd/temporal', 'go.temporal.io/server/cmd/server', 'go.temporal.io/server/cmd/tools/sql']);
  // The staging folder is gone; the binaries are there under Temporal's names.
  expect(readdirSync(bin).sort()).toEqual(['temporal', 'temporal-server', 'temporal-sql-tool']);
  expect(readFileSync(path.join(bin, 'temporal-sql-tool'), 'utf8')).toBe('binary of go.temporal.io/server/cmd/tools/sql');
  expect(lines[0]).toBe(`building temporal, temporal-server, temporal-sql-tool with Go into ${bin} (first run only, a few minutes)...`);
  // Asked for later, a binary is a build of its own.
  await buildTemporalBinaries(['temporal'], bin, () => undefined);
  expect(recorded()).toHaveLength(2);
});

test("a failed build says Go's last lines and leaves nothing behind", async () => {
  const bin = path.join(dir, 'bin-failed');
  process.env.FAKE_GO_FAILS = '1';
  try {
    await expect(buildTemporalBinaries(['temporal-server'], bin, () => undefined)).rejects.toThrow(/failed:\ngo: downloading go\.temporal\.io\/server v1\.29\.1\nverifying module: checksum mismatch/);
  } finally {
    delete process.env.FAKE_GO_FAILS;
  }
  expect(readdirSync(bin)).toEqual([]);
});
