/**
 * Attempts to touch files outside the workspace through the tools: each must fail with a
 * permanent error and leave a sentinel directory outside the workspace exactly as it was.
 */
import { execFileSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, type ToolResult } from '../../src/activities';
import { openBoundary, openDirectory, openResolved, resolveInside, type OpenMode } from '../../src/activities/confinement';
import { compile, startPlan, step, withWorker } from '../support/harness';

const { runTool } = createActivities();
const env = new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });

/** base/ws is the workspace; base/outside and base itself are what must not change. */
const base = mkdtempSync(path.join(os.tmpdir(), 'cadre-escape-'));
const ws = path.join(base, 'ws');
const outside = path.join(base, 'outside');
const secret = path.join(outside, 'secret.txt');
/** What `pwd` prints: the workspace with symlinks resolved (macOS's /tmp is one). */
const realWs = path.join(realpathSync(base), 'ws');

function buildFixture(): void {
  mkdirSync(path.join(outside, 'dir'), { recursive: true });
  writeFileSync(secret, 'top secret\n');
  writeFileSync(path.join(outside, 'log.txt'), 'log\n');
  writeFileSync(path.join(outside, 'dir', 'inner.txt'), 'inner\n');
  mkdirSync(path.join(ws, 'a', 'b'), { recursive: true });
  mkdirSync(path.join(ws, '..hidden'));
  writeFileSync(path.join(ws, '..hidden', 'note.txt'), 'hidden note\n');
  writeFileSync(path.join(ws, 'inside.txt'), 'inside\n');
  const links: Record<string, string> = {
    'secret-link': secret,
    'rel-link': '../outside/secret.txt',
    'log-link': '../outside/log.txt',
    outdir: '../outside',
    chain1: 'chain2',
    chain2: 'a/chain3',
    'a/chain3': '../../outside/secret.txt',
    dirchain: 'a/dirchain2',
    'a/dirchain2': '../../outside',
    'loop-a': 'loop-b',
    'loop-b': 'loop-a',
    self: 'self',
    up: '..',
    root: '/',
    'a/b/escape': '../../../outside/secret.txt',
    deep: 'a/b/../../../outside',
    dangling: '../outside/created.txt',
    'dangling-abs': path.join(outside, 'created-abs.txt'),
    dchain: 'dangling',
    ddir: '../outside/newdir',
    // Links that stay inside: these must keep working.
    inlink: 'inside.txt',
    indir: 'a',
    'hidden-link': '..hidden/note.txt',
  };
  for (const [name, target] of Object.entries(links)) symlinkSync(target, path.join(ws, name));
}
buildFixture();

/** Everything under `base` except the workspace: names, kinds, sizes, mtimes, contents, link targets. */
function snapshot(dir = base): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of readdirSync(dir).sort()) {
    const full = path.join(dir, name);
    if (full === ws) continue;
    const info = lstatSync(full);
    const rel = path.relative(base, full);
    if (info.isSymbolicLink()) out[rel] = { link: readlinkSync(full), mtime: info.mtimeMs };
    else if (info.isDirectory()) Object.assign(out, { [rel]: { dir: true, mtime: info.mtimeMs } }, snapshot(full));
    else out[rel] = { size: info.size, mtime: info.mtimeMs, content: readFileSync(full, 'utf8') };
  }
  out['.'] = { mtime: lstatSync(dir).mtimeMs };
  return out;
}

type Expected = 'OutsideWorkspace' | 'BadToolInput' | 'FileNotFound';
let attempts = 0;
let touchedOutside = 0;

/** Runs one attempt: it must fail permanently with `expected` and change nothing outside. */
async function attempt(run: () => Promise<unknown>, expected: Expected): Promise<void> {
  const before = JSON.stringify(snapshot());
  const err = await run().then(
    (result) => new Error(`expected ${expected}, but it succeeded: ${String(JSON.stringify(result)).slice(0, 200)}`),
    (e: unknown) => e,
  );
  attempts += 1;
  const changed = JSON.stringify(snapshot()) !== before;
  if (changed) touchedOutside += 1;
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect(err).toMatchObject({ type: expected, nonRetryable: true });
  expect(changed).toBe(false);
}

const viaTool = (tool: string, params: Record<string, unknown>) => () => env.run(runTool, { tool, params, workspace: ws, stepId: 'escape' });
/** A shell step that would leave files behind in whatever directory it runs in. */
const inCwd = (cwd: string) => viaTool('shell', { command: 'echo escaped > escaped.txt; echo appended >> log.txt', cwd });

const toolAttempts: [string, () => Promise<unknown>, Expected][] = [
  ['fs.read ../outside/secret.txt', viaTool('fs.read', { path: '../outside/secret.txt' }), 'OutsideWorkspace'],
  ['fs.read an absolute path outside', viaTool('fs.read', { path: secret }), 'OutsideWorkspace'],
  ['fs.read a/../../outside/secret.txt', viaTool('fs.read', { path: 'a/../../outside/secret.txt' }), 'OutsideWorkspace'],
  ['fs.read missing/../../outside/secret.txt', viaTool('fs.read', { path: 'missing/../../outside/secret.txt' }), 'OutsideWorkspace'],
  ['fs.read a symlink to an outside file (absolute target)', viaTool('fs.read', { path: 'secret-link' }), 'OutsideWorkspace'],
  ['fs.read a symlink to an outside file (relative target)', viaTool('fs.read', { path: 'rel-link' }), 'OutsideWorkspace'],
  ['fs.read through a symlinked directory', viaTool('fs.read', { path: 'outdir/secret.txt' }), 'OutsideWorkspace'],
  ['fs.read a chain of symlinks inside -> inside -> outside', viaTool('fs.read', { path: 'chain1' }), 'OutsideWorkspace'],
  ['fs.read through a chain of directory symlinks', viaTool('fs.read', { path: 'dirchain/secret.txt' }), 'OutsideWorkspace'],
  ['fs.read a symlink loop', viaTool('fs.read', { path: 'loop-a' }), 'BadToolInput'],
  ['fs.read through a symlink to itself', viaTool('fs.read', { path: 'self/x' }), 'BadToolInput'],
  ['fs.read through a symlink to the root\'s parent', viaTool('fs.read', { path: 'up/outside/secret.txt' }), 'OutsideWorkspace'],
  ['fs.read through a symlink to /', viaTool('fs.read', { path: `root${secret}` }), 'OutsideWorkspace'],
  ['fs.read a nested symlink climbing out', viaTool('fs.read', { path: 'a/b/escape' }), 'OutsideWorkspace'],
  ['fs.read a symlink whose target climbs out through ..', viaTool('fs.read', { path: 'deep/secret.txt' }), 'OutsideWorkspace'],
  ['fs.read a path with a NUL byte', viaTool('fs.read', { path: 'inside.txt\0../../outside/secret.txt' }), 'BadToolInput'],
  ['fs.read the root\'s parent itself', viaTool('fs.read', { path: 'up' }), 'OutsideWorkspace'],
  ['fs.write ../outside/new.txt', viaTool('fs.write', { path: '../outside/new.txt', content: 'x' }), 'OutsideWorkspace'],
  ['fs.write an absolute path outside', viaTool('fs.write', { path: path.join(outside, 'new.txt'), content: 'x' }), 'OutsideWorkspace'],
  ['fs.write through a symlinked directory', viaTool('fs.write', { path: 'outdir/new.txt', content: 'x' }), 'OutsideWorkspace'],
  ['fs.write over an outside file through a symlinked directory', viaTool('fs.write', { path: 'outdir/dir/inner.txt', content: 'x' }), 'OutsideWorkspace'],
  ['fs.write over an outside file through a symlink', viaTool('fs.write', { path: 'secret-link', content: 'x' }), 'OutsideWorkspace'],
  ['fs.write append to a symlink to an outside file', viaTool('fs.write', { path: 'log-link', content: 'x', append: true }), 'OutsideWorkspace'],
  ['fs.write append through a symlinked directory', viaTool('fs.write', { path: 'outdir/log.txt', content: 'x', append: true }), 'OutsideWorkspace'],
  ['fs.write to a dangling symlink pointing outside', viaTool('fs.write', { path: 'dangling', content: 'x' }), 'OutsideWorkspace'],
  ['fs.write to a dangling absolute symlink pointing outside', viaTool('fs.write', { path: 'dangling-abs', content: 'x' }), 'OutsideWorkspace'],
  ['fs.write to a symlink to a dangling symlink pointing outside', viaTool('fs.write', { path: 'dchain', content: 'x' }), 'OutsideWorkspace'],
  ['fs.write under a dangling directory symlink pointing outside', viaTool('fs.write', { path: 'ddir/file.txt', content: 'x' }), 'OutsideWorkspace'],
  ['fs.write creating directories through a symlinked directory', viaTool('fs.write', { path: 'outdir/sub/deeper/new.txt', content: 'x' }), 'OutsideWorkspace'],
  ['fs.write through a symlink to the root\'s parent', viaTool('fs.write', { path: 'up/new.txt', content: 'x' }), 'OutsideWorkspace'],
  ['fs.write a/b/../../../new.txt', viaTool('fs.write', { path: 'a/b/../../../new.txt', content: 'x' }), 'OutsideWorkspace'],
  ['fs.write a path with a NUL byte', viaTool('fs.write', { path: 'a\0/../../outside/x', content: 'x' }), 'BadToolInput'],
  ['shell cwd ..', inCwd('..'), 'OutsideWorkspace'],
  ['shell cwd an absolute path outside', inCwd(outside), 'OutsideWorkspace'],
  ['shell cwd a symlinked directory', inCwd('outdir'), 'OutsideWorkspace'],
  ['shell cwd a symlink to the root\'s parent', inCwd('up'), 'OutsideWorkspace'],
  ['shell cwd a chain of directory symlinks', inCwd('dirchain'), 'OutsideWorkspace'],
  ['shell cwd a symlink to /', inCwd('root'), 'OutsideWorkspace'],
  ['shell cwd a symlink loop', inCwd('loop-a'), 'BadToolInput'],
  ['shell cwd with a NUL byte', inCwd('a\0'), 'BadToolInput'],
];

/**
 * The check-then-open race, made deterministic by driving the two phases directly: the path is
 * checked while harmless, then swapped for a symlink out, then opened.
 */
async function race(name: string, mode: OpenMode | 'directory', swap: (at: string) => void, viaProcFd = true): Promise<unknown> {
  const boundary = await openBoundary(ws, { name: 'workspace', viaProcFd });
  const resolved = await resolveInside(boundary, name);
  swap(path.join(ws, name));
  if (mode === 'directory') return (await openDirectory(resolved)).close();
  return (await openResolved(resolved, mode)).close();
}

function prepare(file: string, content = 'harmless\n'): void {
  mkdirSync(path.dirname(path.join(ws, file)), { recursive: true });
  writeFileSync(path.join(ws, file), content);
}
/** Replaces the file at `at` with a symlink to `target`. */
const swapFileFor = (target: string) => (at: string) => {
  rmSync(at);
  symlinkSync(target, at);
};
/** Moves the workspace's directory `dir` away and puts a symlink to `target` in its place. */
const swapDirFor = (dir: string, target: string) => () => {
  renameSync(path.join(ws, dir), path.join(ws, `${dir}-moved`));
  symlinkSync(target, path.join(ws, dir));
};

const raceAttempts: [string, () => Promise<unknown>][] = [
  ['race: a final symlink swapped in before a read', () => (prepare('r1.txt'), race('r1.txt', 'read', swapFileFor(secret)))],
  ['race: a final symlink swapped in before a write', () => (prepare('r2.txt'), race('r2.txt', 'write', swapFileFor(secret)))],
  ['race: a final symlink swapped in before an append', () => (prepare('r3.txt'), race('r3.txt', 'append', swapFileFor(path.join(outside, 'log.txt'))))],
  ['race: a final dangling symlink swapped in before creating a file', () => race('r4.txt', 'write', (at) => symlinkSync(path.join(outside, 'r4.txt'), at))],
  ['race: a directory swapped in before creating a file in it', () => (prepare('r5/keep.txt'), race('r5/new.txt', 'write', swapDirFor('r5', outside)))],
  ['race: a directory swapped in before overwriting a file in it', () => (prepare('r6/log.txt'), race('r6/log.txt', 'write', swapDirFor('r6', outside)))],
  ['race: a directory swapped in before a read', () => (prepare('r7/secret.txt'), race('r7/secret.txt', 'read', swapDirFor('r7', outside)))],
  ['race: a directory swapped in before creating directories in it', () => (prepare('r8/keep.txt'), race('r8/sub/new.txt', 'write', swapDirFor('r8', outside)))],
  ['race: a working directory swapped in before the command starts', () => (prepare('r9/keep.txt'), race('r9', 'directory', swapDirFor('r9', outside)))],
  // Without /proc/self/fd (other systems): O_NOFOLLOW and the check after opening.
  ['race without /proc: a final symlink swapped in before a read', () => (prepare('r10.txt'), race('r10.txt', 'read', swapFileFor(secret), false))],
  ['race without /proc: a final symlink swapped in before an append', () => (prepare('r11.txt'), race('r11.txt', 'append', swapFileFor(path.join(outside, 'log.txt')), false))],
  ['race without /proc: a directory swapped in before a read', () => (prepare('r12/secret.txt'), race('r12/secret.txt', 'read', swapDirFor('r12', outside), false))],
];

afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('escapes from the workspace', () => {
  afterAll(() => {
    process.stdout.write(`escape attempts: ${attempts}, touched outside: ${touchedOutside}\n`);
  });

  test.each(toolAttempts)('runTool: %s', async (_name, run, expected) => {
    await attempt(run, expected);
  });

  test.each(raceAttempts)('%s', async (_name, run) => {
    await attempt(run, 'OutsideWorkspace');
  });

  test('through real plans on the dev server: refused on the first attempt, never retried', async () => {
    const plan = compile(
      `
name: escapes
defaults: { retry: { maximumAttempts: 3, initialInterval: 100ms }, onFailure: skip }
steps:
  - { id: read_link, tool: fs.read, with: { path: secret-link } }
  - { id: write_dir, tool: fs.write, with: { path: outdir/new.txt, content: x } }
  - { id: write_dangling, tool: fs.write, with: { path: dangling, content: x } }
  - { id: append_link, tool: fs.write, with: { path: log-link, content: x, append: true } }
  - { id: cwd_link, tool: shell, with: { command: "echo escaped > escaped.txt", cwd: outdir } }
`,
      ws,
    );
    const before = JSON.stringify(snapshot());
    const d = await withWorker(async (h) => h.client.result(await startPlan(h, plan)));
    // The steps run in parallel: if anything changed, count every one of them as touching outside.
    const changed = JSON.stringify(snapshot()) !== before;
    attempts += plan.steps.length;
    if (changed) touchedOutside += plan.steps.length;
    expect(changed).toBe(false);
    for (const { id } of plan.steps) {
      expect(step(d, id)).toMatchObject({ status: 'skipped', attempts: 1, error: expect.stringContaining('OutsideWorkspace') });
    }
  });
});

describe('what stays inside the workspace works', () => {
  const run = async (tool: string, params: Record<string, unknown>) => ((await env.run(runTool, { tool, params, workspace: ws, stepId: 'inside' })) as ToolResult).output;

  test('names that merely start with .. are inside: fs.read, fs.write and shell cwd', async () => {
    expect(await run('fs.read', { path: '..hidden/note.txt' })).toMatchObject({ content: 'hidden note\n' });
    expect(await run('fs.write', { path: '..hidden/new.txt', content: 'new' })).toEqual({ path: '..hidden/new.txt', bytes: 3 });
    expect(readFileSync(path.join(ws, '..hidden', 'new.txt'), 'utf8')).toBe('new');
    for (const name of ['...', 'a..b', '..x..']) await run('fs.write', { path: `${name}/f.txt`, content: name });
    expect(await run('fs.read', { path: 'a..b/f.txt' })).toMatchObject({ content: 'a..b' });
    expect(await run('shell', { command: 'pwd; cat note.txt', cwd: '..hidden' })).toMatchObject({ stdout: `${path.join(realWs, '..hidden')}\nhidden note\n` });
  });

  test('symlinks that stay inside work for reads, writes, appends and cwd', async () => {
    expect(await run('fs.read', { path: 'inlink' })).toMatchObject({ content: 'inside\n' });
    expect(await run('fs.read', { path: 'hidden-link' })).toMatchObject({ content: 'hidden note\n' });
    await run('fs.write', { path: 'inlink', content: 'more\n', append: true });
    expect(readFileSync(path.join(ws, 'inside.txt'), 'utf8')).toBe('inside\nmore\n');
    expect(lstatSync(path.join(ws, 'inlink')).isSymbolicLink()).toBe(true);
    await run('fs.write', { path: 'indir/b/via-link.txt', content: 'x' });
    expect(readFileSync(path.join(ws, 'a', 'b', 'via-link.txt'), 'utf8')).toBe('x');
    // Out of the workspace and back in is inside.
    expect(await run('fs.read', { path: `up/ws/inside.txt` })).toMatchObject({ content: 'inside\nmore\n' });
    expect(await run('shell', { command: 'pwd', cwd: 'indir/b' })).toMatchObject({ stdout: `${path.join(realWs, 'a', 'b')}\n` });
  });

  test('a FIFO in the workspace is refused as not a regular file instead of hanging the step', async () => {
    execFileSync('mkfifo', [path.join(ws, 'pipe')]);
    await expect(run('fs.read', { path: 'pipe' })).rejects.toMatchObject({ type: 'BadToolInput', message: expect.stringContaining('not a regular file') });
    await expect(run('fs.write', { path: 'pipe', content: 'x' })).rejects.toMatchObject({ type: 'BadToolInput', message: expect.stringContaining('not a regular file') });
  });

  test('a write through a dangling symlink is refused even when it points inside', async () => {
    symlinkSync('not-yet.txt', path.join(ws, 'dangling-inside'));
    await expect(run('fs.write', { path: 'dangling-inside', content: 'x' })).rejects.toMatchObject({ type: 'BadToolInput', nonRetryable: true });
    expect(() => lstatSync(path.join(ws, 'not-yet.txt'))).toThrow();
  });

  test('a boundary can deny sub-paths (a worktree\'s .git), whichever way they are reached', async () => {
    mkdirSync(path.join(ws, '.git'), { recursive: true });
    symlinkSync('.git', path.join(ws, 'git-link'));
    const boundary = await openBoundary(ws, { name: 'worktree', deny: ['.git'] });
    for (const target of ['.git', '.git/config', 'a/../.git/HEAD', 'git-link/config', path.join(ws, '.git')]) {
      await expect(resolveInside(boundary, target)).rejects.toMatchObject({ type: 'OutsideWorkspace', message: expect.stringContaining('which the worktree') });
    }
    expect((await resolveInside(boundary, '.gitignore')).names).toEqual(['.gitignore']);
  });

  test('the module itself refuses NUL bytes in paths, as bad input', async () => {
    const boundary = await openBoundary(ws, { name: 'workspace' });
    await expect(resolveInside(boundary, 'inside.txt\0x', 'cwd')).rejects.toMatchObject({ type: 'BadToolInput', nonRetryable: true, message: expect.stringContaining('cwd "inside.txt\\u0000x" contains a NUL byte') });
  });
});
