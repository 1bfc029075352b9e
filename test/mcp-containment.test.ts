/**
 * An MCP stdio server is contained as a shell call is, for its whole life: its own cgroup, joined
 * before it starts, caps its processes as one (root's rlimits do not: the kernel exempts root from
 * RLIMIT_NPROC), a role's narrowing reaches it, and no descriptor the worker inherited does. Real
 * bubblewrap, real servers.
 */
import { type StdioOptions, spawn } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { McpServers } from '../src/activities/tools/custom/mcp';
import { DEFAULT_PROFILE } from '../src/sandbox/profile';
import { NO_SECRETS } from '../src/sandbox/environment';
import { TSX } from './support/tsx';

const repo = path.resolve(__dirname, '..');
const probe = path.join(__dirname, 'fixtures', 'tools', 'probe-mcp-server.ts');
const server = (limits?: { processes: number }) => ({ command: process.execPath, args: ['--import', TSX, probe], sandbox: { read: [repo], ...(limits && { limits }) } });

/** The host's processes whose command line names the probe server (bwrap, its launcher, node inside). */
function probeProcesses(): number[] {
  return readdirSync('/proc').flatMap((name) => {
    if (!/^\d+$/.test(name)) return [];
    try {
      return readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('probe-mcp-server.ts') ? [Number(name)] : [];
    } catch {
      return [];
    }
  });
}

test('a stdio server runs in a cgroup of its own, joined before it starts: its processes are capped as one, a role narrowing them for its agents', async () => {
  const servers = new McpServers({ probe: server({ processes: 32 }), free: server() }, () => ({ profile: DEFAULT_PROFILE, secrets: NO_SECRETS }));
  try {
    const signal = new AbortController().signal;
    const capped = await servers.callTool('probe', 'start_sleepers', { n: 100 }, signal);
    // node's own threads count too: the server started fewer than 32 sleepers, where it could start 100 uncapped.
    expect((capped.value as { started: number }).started).toBeLessThan(32);
    expect((capped.value as { started: number }).started).toBeGreaterThan(0);
    // Every host process of the server is in a call cgroup of cadre's (seen from outside).
    const pids = probeProcesses();
    expect(pids.length).toBeGreaterThan(0);
    for (const pid of pids) expect({ pid, cgroup: readFileSync(`/proc/${pid}/cgroup`, 'utf8') }).toEqual({ pid, cgroup: expect.stringContaining('cadre-sandbox-') });
    // The positive control: the worker's own limits (4,096 processes) let the other server start all 100.
    const free = await servers.callTool('free', 'start_sleepers', { n: 100 }, signal);
    expect(free.value).toEqual({ started: 100 });
    // A role's narrowing reaches the server: a call from its agent goes to an instance started under it.
    const narrowed = await servers.callTool('free', 'start_sleepers', { n: 100 }, signal, [{ limits: { processes: 24 } }]);
    expect((narrowed.value as { started: number }).started).toBeLessThan(24);
    expect((await servers.callTool('free', 'start_sleepers', { n: 100 }, signal)).value).toEqual({ started: 100 });
  } finally {
    await servers.close();
  }
}, 60_000);

test('no descriptor the worker inherited without close-on-exec reaches a stdio server', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-mcp-fds-'));
  const secret = path.join(dir, 'leak-marker.txt');
  writeFileSync(secret, 'the worker’s');
  // A worker started with fd 40 open (a supervisor's; node marks close-on-exec only those up to the
  // first gap past 15): it asks the probe server where its descriptors lead.
  const script = path.join(dir, 'worker.ts');
  writeFileSync(
    script,
    [
      `import { McpServers } from ${JSON.stringify(path.join(repo, 'src/activities/tools/custom/mcp'))};`,
      `import { DEFAULT_PROFILE } from ${JSON.stringify(path.join(repo, 'src/sandbox/profile'))};`,
      `import { NO_SECRETS } from ${JSON.stringify(path.join(repo, 'src/sandbox/environment'))};`,
      // The control: any other process the worker starts holds fd 40, as its parent gave it.
      `console.log(JSON.stringify({ control: require('node:child_process').spawnSync('/bin/sh', ['-c', 'readlink /proc/self/fd/40'], { encoding: 'utf8' }).stdout.trim() }));`,
      `const servers = new McpServers({ probe: ${JSON.stringify(server())} }, () => ({ profile: DEFAULT_PROFILE, secrets: NO_SECRETS }));`,
      `servers.callTool('probe', 'descriptors', {}, new AbortController().signal).then(async (r) => { console.log(JSON.stringify(r.value)); await servers.close(); });`,
    ].join('\n'),
  );
  const fd = openSync(secret, 'r');
  const stdio: StdioOptions = ['ignore', 'pipe', 'inherit', ...Array<'ignore'>(37).fill('ignore'), fd];
  const child = spawn(process.execPath, ['--import', TSX, script], { stdio });
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  await new Promise((resolve) => child.once('exit', resolve));
  const [control, probed] = out.trim().split('\n').map((line) => JSON.parse(line) as { control?: string; links?: string[] });
  expect(control).toEqual({ control: secret });
  expect(probed.links?.length).toBeGreaterThan(2);
  expect(probed.links?.filter((l) => l.includes('leak-marker'))).toEqual([]);
}, 60_000);
