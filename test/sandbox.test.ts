/**
 * The sandbox as a plan author meets it, on the dev server: what a step can use by default and
 * what the plan's `sandbox` and `egress` open; `sandbox: none` (warned about, audited); a worker
 * without bubblewrap (one line naming the fix); cadre's own files, placeholders and limits.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_PROFILE } from '../src/sandbox/profile';
import { auditFile } from '../src/store/audit-files';
import { runCadre, testServerEnv } from './support/cli';
import { compile, startPlan, step, tempWorkspace, withWorker } from './support/harness';
import { TSX } from './support/tsx';
import { uniqueSleep, untilProcesses } from './support/processes';
import { runTool } from '../src/activities/tools/run-tool';
import { INLINE_OUTPUT_LIMITS, defaultToolSandbox } from '../src/activities/tools/context';

const auditDir = mkdtempSync(path.join(os.tmpdir(), 'cadre-sandbox-audit-'));

test('by default a step sees its workspace, an empty home and its own processes; the plan opens variables, paths, hosts and sets limits', async () => {
  const ws = tempWorkspace();
  const extra = mkdtempSync(path.join(os.tmpdir(), 'cadre-extra-'));
  writeFileSync(path.join(extra, 'tool.txt'), 'toolchain');
  const server = createServer((_req, res) => res.end('reached'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  process.env.CADRE_SANDBOX_TEST_PASSED = 'passed-value';
  process.env.CADRE_SANDBOX_TEST_HIDDEN = 'hidden-value';
  const plan = compile(
    `
name: sandbox-default
sandbox: { env: [CADRE_SANDBOX_TEST_PASSED], read: [${extra}], limits: { fileSize: 1MiB } }
egress: { loopback: [${port}] }
steps:
  - { id: where, tool: shell, with: { command: 'echo "$HOME|$CADRE_SANDBOX_TEST_PASSED|$CADRE_SANDBOX_TEST_HIDDEN|$(ls -A $HOME | wc -l)|$(ls /proc | grep -c "^[0-9]")"' } }
  - { id: read, tool: shell, with: { command: "cat ${extra}/tool.txt; touch ${extra}/new 2>&1 || true" } }
  - { id: reach, tool: shell, with: { command: "curl -sS http://127.0.0.1:${port}/" } }
  - { id: big, onFailure: skip, tool: shell, with: { command: "head -c 2000000 /dev/zero > big.bin" } }
output: { where: "{{ steps.where.output.stdout }}", read: "{{ steps.read.output.stdout }}", reach: "{{ steps.reach.output.stdout }}" }
`,
    ws,
  );
  try {
    await withWorker(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('completed');
      const out = (id: string) => (d.output as Record<string, string>)[id];
      // An empty home; the variable the plan names, not the other; a few processes of its own at most.
      const [home, passed, hidden, homeEntries, processes] = out('where').trim().split('|');
      expect({ home, passed, hidden, homeEntries }).toEqual({ home: '/home/cadre', passed: 'passed-value', hidden: '', homeEntries: '0' });
      expect(Number(processes)).toBeLessThan(10);
      expect(out('read')).toMatch(/^toolchain.*Read-only file system/s);
      expect(out('reach')).toBe('reached');
      expect(step(d, 'big')).toMatchObject({ status: 'skipped', error: expect.stringContaining('File size limit exceeded') });
      expect(existsSync(path.join(extra, 'new'))).toBe(false);
    });
  } finally {
    server.close();
    delete process.env.CADRE_SANDBOX_TEST_PASSED;
    delete process.env.CADRE_SANDBOX_TEST_HIDDEN;
  }
});

test('a plain workspace keeps no trace of the protection of its missing .git; .cadre stays as cadre made it', async () => {
  const ws = tempWorkspace();
  const plan = compile(
    `
name: sandbox-placeholders
steps:
  - { id: a, forEach: [1, 2, 3, 4, 5, 6], concurrency: 6, tool: shell, with: { command: "mkdir .git/hooks 2>&1; ls -a" } }
output: "{{ steps.a.output[*].stdout }}"
`,
    ws,
  );
  await withWorker(async (h) => {
    const d = await h.client.result(await startPlan(h, plan));
    expect(d.status).toBe('completed');
    for (const stdout of d.output as string[]) expect(stdout).toContain('Read-only file system');
    expect(existsSync(path.join(ws, '.git'))).toBe(false);
    expect(existsSync(path.join(ws, '.cadre'))).toBe(true);
  });
});

test('sandbox: none is honoured, recorded in the audit log and warned about by cadre run', async () => {
  const ws = tempWorkspace();
  const outside = path.join(mkdtempSync(path.join(os.tmpdir(), 'cadre-outside-')), 'written');
  const yaml = `
name: sandbox-none
sandbox: none
steps:
  - { id: out, tool: shell, with: { command: "echo free > ${outside}" } }
`;
  await withWorker(
    async (h) => {
      const id = await startPlan(h, compile(yaml, ws));
      expect((await h.client.result(id)).status).toBe('completed');
      expect(readFileSync(outside, 'utf8')).toBe('free\n');
      const events = readFileSync(auditFile(auditDir, id), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(events).toContainEqual(expect.objectContaining({ event: 'tool.unconfined', step: 'out', tool: 'shell', sandbox: 'none' }));
      writeFileSync(path.join(ws, 'plan.yaml'), yaml);
      const run = await runCadre(['run', 'plan.yaml', '--task-queue', h.taskQueue], ws, testServerEnv());
      expect(run.stderr).toContain("warning: plan.yaml says sandbox: none: its tools run unconfined, with the worker's permissions, files and network (docs/security.md)");
    },
    { auditDir },
  );
});

test("a role narrows the run's sandbox for its agent and that agent's subtasks, whatever role they take", async () => {
  const ws = tempWorkspace();
  const server = createServer((_req, res) => res.end('reached'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  process.env.CADRE_SANDBOX_TEST_ROLE = 'role-value';
  const role = (name: string, sandbox = '') =>
    `name: ${name}\ndescription: Looks around.\ncompetencies: [look]\nsystem: Look.\ntools: [shell]\napprovals: { shell: allow }\nauthority: []\nconsultWhen: []\n${sandbox}`;
  mkdirSync(path.join(ws, 'roles'));
  writeFileSync(path.join(ws, 'roles', 'open.yaml'), role('open'));
  writeFileSync(path.join(ws, 'roles', 'narrow.yaml'), role('narrow', 'sandbox: { env: [], egress: none, limits: { fileSize: 1MiB } }\n'));
  // Each agent records what it sees: the variable, the server, and how much of a 2 MB file it could write.
  const look = (file: string) => ({
    reply: { toolCalls: [{ name: 'shell', args: { command: `{ echo "v=$CADRE_SANDBOX_TEST_ROLE"; curl -sS --max-time 5 http://127.0.0.1:${port}/ 2>&1; echo; (head -c 2000000 /dev/zero > big-${file}) 2>/dev/null; wc -c < big-${file}; } > ${file} 2>/dev/null` } }] },
  });
  const done = { reply: { toolCalls: [{ name: 'signal_state', args: { state: 'completing', reason: 'looked', result: 'ok' } }] } };
  const scenario = (name: string, turns: unknown[]) => {
    writeFileSync(path.join(ws, `${name}.json`), JSON.stringify({ turns }));
    return `scripted:${path.join(ws, `${name}.json`)}`;
  };
  const open = scenario('open-model', [look('open.txt'), done]);
  const narrow = scenario('narrow-model', [look('narrow.txt'), { reply: { toolCalls: [{ name: 'spawn_subtask', args: { role: 'open', prompt: 'look' } }] } }, done]);
  const sub = scenario('sub-model', [look('sub.txt'), done]);
  const plan = compile(
    `
name: sandbox-role
team: { model: "${sub}" }
sandbox: { env: [CADRE_SANDBOX_TEST_ROLE] }
egress: { loopback: [${port}] }
steps:
  - { id: open, agent: { role: open, prompt: look, model: "${open}" } }
  - { id: narrow, dependsOn: [open], agent: { role: narrow, prompt: look, model: "${narrow}" } }
`,
    ws,
  );
  try {
    await withWorker(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('completed');
      // curl says how long its refused connect took (`after 0 ms`, `after 1 ms`): not what is compared.
      const seen = (file: string) => readFileSync(path.join(ws, file), 'utf8').replace(/after \d+ ms/g, 'after N ms').split('\n').filter(Boolean);
      expect(seen('open.txt')).toEqual(['v=role-value', 'reached', '2000000']);
      const [variable, reach, big] = seen('narrow.txt');
      expect([variable, big]).toEqual(['v=', String(1024 ** 2)]);
      expect(reach).toMatch(/^curl: \(\d+\)/);
      // The subtask took the open role, and still got its parent's narrowed sandbox.
      expect(d.workers?.map((w) => [w.step, w.role])).toContainEqual(['narrow/sub-1', 'open']);
      expect(seen('sub.txt')).toEqual(seen('narrow.txt'));
    });
  } finally {
    server.close();
    delete process.env.CADRE_SANDBOX_TEST_ROLE;
  }
});

test('a variable the worker holds as a secret cannot be passed, even by name', async () => {
  const ws = tempWorkspace();
  const plan = compile(
    `
name: sandbox-secret-env
sandbox: { env: [OPENAI_API_KEY] }
steps:
  - { id: a, tool: shell, with: { command: "echo $OPENAI_API_KEY" } }
`,
    ws,
  );
  await withWorker(async (h) => {
    const d = await h.client.result(await startPlan(h, plan));
    expect(d.status).toBe('failed');
    expect(step(d, 'a').error).toContain('SandboxConfigInvalid: sandbox.env names OPENAI_API_KEY, which this worker holds as a secret');
  });
});

test("a command runs in a cgroup of its own with its OOM score raised, both done by its launcher before bwrap starts; the worker's stay as they were", async () => {
  const ws = tempWorkspace();
  const argv = ['sleep', uniqueSleep(30)];
  const aborted = new AbortController();
  const call = runTool('shell', { command: `exec ${argv.join(' ')}` }, { workspace: ws, stepId: 's', attempt: 1, signal: aborted.signal, limits: INLINE_OUTPUT_LIMITS, sandbox: defaultToolSandbox() });
  try {
    const [pid] = await untilProcesses(argv, (pids) => pids.length === 1, 10_000);
    // Seen from outside: the command (and bwrap, its parent) in a call cgroup of cadre's, the worker not.
    const bwrap = Number(/^PPid:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
    for (const p of [pid, bwrap]) expect({ p, cgroup: readFileSync(`/proc/${p}/cgroup`, 'utf8'), oom: readFileSync(`/proc/${p}/oom_score_adj`, 'utf8').trim() }).toEqual({ p, cgroup: expect.stringContaining('cadre-sandbox-'), oom: '1000' });
    expect(readFileSync('/proc/self/cgroup', 'utf8')).not.toContain('cadre-sandbox-');
    expect(readFileSync('/proc/self/oom_score_adj', 'utf8').trim()).not.toBe('1000');
  } finally {
    aborted.abort();
    await call.catch(() => undefined);
  }
});

test('a worker without bubblewrap fails a command with one line naming the fix, and says so when it starts', () => {
  const ws = tempWorkspace();
  // A PATH without bwrap (node and the shell are found by absolute path).
  const script = `
    const { runTool } = require(${JSON.stringify(path.resolve(__dirname, '../src/activities/tools/run-tool'))});
    const { INLINE_OUTPUT_LIMITS, defaultToolSandbox } = require(${JSON.stringify(path.resolve(__dirname, '../src/activities/tools/context'))});
    const { workerSandboxWarning } = require(${JSON.stringify(path.resolve(__dirname, '../src/activities/sandbox-settings'))});
    console.log('warning: ' + workerSandboxWarning('/nonexistent.yaml'));
    runTool('shell', { command: 'true' }, { workspace: ${JSON.stringify(ws)}, stepId: 's', attempt: 1, signal: new AbortController().signal, limits: INLINE_OUTPUT_LIMITS, sandbox: defaultToolSandbox() })
      .then(() => console.log('ran'), (e) => console.log(e.type + ': ' + e.message));
  `;
  const done = spawnSync(process.execPath, ['--import', TSX, '-e', script], { env: { ...process.env, PATH: '/nonexistent' }, encoding: 'utf8' });
  const lines = done.stdout.trim().split('\n');
  expect(lines[0]).toMatch(/^warning: bubblewrap \(bwrap\) is not installed on worker .+: apt-get install bubblewrap, or set sandbox: none \(docs\/security\.md\); until then every command a tool starts fails$/);
  expect(lines[1]).toMatch(/^SandboxUnavailable: bubblewrap \(bwrap\) is not installed on worker .+: apt-get install bubblewrap, or set sandbox: none \(docs\/security\.md\)$/);
});

test('CADRE_SANDBOX=none on a worker: tools run unconfined, its environment still without secrets, and the worker says so', async () => {
  const ws = tempWorkspace();
  const plan = compile(
    `
name: sandbox-worker-none
steps:
  - { id: a, tool: shell, with: { command: 'echo "$OPENAI_API_KEY|$MY_SERVICE_TOKEN|$CADRE_SANDBOX_TEST_PLAIN"' } }
output: "{{ steps.a.output.stdout }}"
`,
    ws,
  );
  process.env.MY_SERVICE_TOKEN = 'tok-123456789';
  process.env.CADRE_SANDBOX_TEST_PLAIN = 'plain';
  try {
    await withWorker(
      async (h) => {
        const d = await h.client.result(await startPlan(h, plan));
        expect(d.output).toBe('||plain\n');
      },
      { activityDeps: { sandbox: { ...DEFAULT_PROFILE, mode: 'none' } } },
    );
  } finally {
    delete process.env.MY_SERVICE_TOKEN;
    delete process.env.CADRE_SANDBOX_TEST_PLAIN;
  }
  const started = spawnSync(process.execPath, ['--import', TSX, '-e', `console.log(require(${JSON.stringify(path.resolve(__dirname, '../src/activities/sandbox-settings'))}).workerSandboxWarning('/nonexistent.yaml'))`], {
    env: { ...process.env, CADRE_SANDBOX: 'none' },
    encoding: 'utf8',
  });
  expect(started.stdout.trim()).toBe("sandbox: none (CADRE_SANDBOX): tools run unconfined, with this worker's permissions, files and network (docs/security.md)");
});

test('in a worktree, git in the sandbox reads history but cannot write it; cadre commits for the agent', async () => {
  const home = mkdtempSync(path.join(os.tmpdir(), 'cadre-sandbox-git-'));
  const repo = path.join(home, 'repo');
  execFileSync('sh', ['-c', `mkdir ${repo} && cd ${repo} && git init -q -b main && git -c user.name=t -c user.email=t@x commit -q --allow-empty -m first`]);
  const plan = compile(
    `
name: sandbox-git
steps:
  - { id: look, worktree: { repo: ${repo}, task: t }, tool: shell, with: { command: "git log --format=%s; echo x > file; git add file 2>&1 | head -1; git commit -m no 2>&1 | tail -1" } }
  - { id: commit, dependsOn: [look], worktree: { repo: ${repo}, task: t }, tool: git.commit, with: { message: "by cadre", all: true } }
output: "{{ steps.look.output.stdout }}"
`,
    home,
  );
  await withWorker(async (h) => {
    const d = await h.client.result(await startPlan(h, plan));
    expect(d.status).toBe('completed');
    const look = d.output as string;
    expect(look).toMatch(/^first\n.*(Read-only file system|Unable to create)/s);
    expect(execFileSync('git', ['log', '--format=%s', 'cadre/sandbox-git/t'], { cwd: repo, encoding: 'utf8' })).toBe('by cadre\nfirst\n');
  });
});

test('no setuid or setgid bit can be set, /proc is read-only, and ordinary modes still work', async () => {
  const ws = tempWorkspace();
  const node = process.execPath;
  const script = [
    "const fs = require('fs');",
    "const t = (name, f) => { try { f(); console.log(name + ' ok'); } catch (e) { console.log(name + ' ' + e.code); } };",
    "t('open-suid', () => fs.openSync('a', 'w', 0o4755));",
    "t('chmod-suid', () => { fs.writeFileSync('b', ''); fs.chmodSync('b', 0o4755); });",
    "t('fchmod-sgid', () => { const fd = fs.openSync('c', 'w'); fs.fchmodSync(fd, 0o2755); });",
    "t('chmod-exec', () => { fs.writeFileSync('d', ''); fs.chmodSync('d', 0o755); });",
    "t('sysctl', () => fs.writeFileSync('/proc/sys/kernel/core_pattern', 'x'));",
  ].join(' ');
  const plan = compile(
    `
name: sandbox-seccomp
steps:
  - { id: a, tool: shell, with: { command: ${JSON.stringify(`${node} -e ${JSON.stringify(script)}`)} } }
output: "{{ steps.a.output.stdout }}"
`,
    ws,
  );
  await withWorker(async (h) => {
    const d = await h.client.result(await startPlan(h, plan));
    expect(d.output).toBe('open-suid EPERM\nchmod-suid EPERM\nfchmod-sgid EPERM\nchmod-exec ok\nsysctl EROFS\n');
  });
});
