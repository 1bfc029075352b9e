/**
 * Attempts to get out of a git worktree, or into its `.git`, through the tools: each must fail
 * permanently and leave the repository, its metadata and an outside canary exactly as they were.
 */
import { lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import { openBoundary, openResolved, resolveInside } from '../../src/activities/confinement';
import { createWorktree } from '../../src/git';
import { tempRepository } from '../support/git-repo';
import { compile, startPlan, step, withWorker } from '../support/harness';

const { runTool } = createActivities();
const env = new MockActivityEnvironment(undefined, { logger: new DefaultLogger('ERROR') });

const { home, repo } = tempRepository('cadre-wt-escape-');
const outside = path.join(home, 'outside');
const canary = path.join(outside, 'canary.txt');
let tree = '';

beforeAll(async () => {
  mkdirSync(outside);
  writeFileSync(canary, 'canary\n');
  tree = (await createWorktree({ repo, plan: 'escapes', task: 't' })).path;
  const links: Record<string, string> = {
    'canary-link': canary,
    'rel-canary': path.relative(tree, canary),
    outdir: outside,
    'git-link': '.git',
    'repo-git': path.join(repo, '.git'),
    'repo-config': path.join(repo, '.git', 'config'),
    'repo-root': repo,
    up: '..',
    dangling: path.join(outside, 'created.txt'),
  };
  for (const [name, target] of Object.entries(links)) symlinkSync(target, path.join(tree, name));
});

/** Everything under `home` except the worktree's own files: the repository (and its .git), the canary. */
function snapshot(dir = home): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of readdirSync(dir).sort()) {
    const full = path.join(dir, name);
    const info = lstatSync(full);
    const rel = path.relative(home, full);
    if (info.isSymbolicLink()) out[rel] = { link: readlinkSync(full) };
    else if (info.isDirectory()) Object.assign(out, { [rel]: { dir: true, mtime: full === tree || path.dirname(full) === tree ? 0 : info.mtimeMs } }, full === tree ? {} : snapshot(full));
    else out[rel] = { size: info.size, mtime: info.mtimeMs, content: readFileSync(full, 'utf8') };
  }
  return out;
}
/** The worktree's `.git` link file, which no tool may read or change. */
const gitFile = () => readFileSync(path.join(tree, '.git'), 'utf8');

let attempts = 0;
let touched = 0;

async function attempt(run: () => Promise<unknown>, expected: 'OutsideWorkspace' | 'BadToolInput'): Promise<void> {
  const before = JSON.stringify([snapshot(), gitFile()]);
  const err = await run().then(
    (result) => new Error(`expected ${expected}, but it succeeded: ${String(JSON.stringify(result)).slice(0, 200)}`),
    (e: unknown) => e,
  );
  attempts += 1;
  const changed = JSON.stringify([snapshot(), gitFile()]) !== before;
  if (changed) touched += 1;
  expect(err).toBeInstanceOf(ApplicationFailure);
  expect(err).toMatchObject({ type: expected, nonRetryable: true });
  expect((err as Error).message).toContain(`worktree ${tree}`);
  expect(changed).toBe(false);
}

const viaTool = (tool: string, params: Record<string, unknown>) => () => env.run(runTool, { tool, params, workspace: tree, worktree: true, stepId: 'escape' });
const inCwd = (cwd: string) => viaTool('shell', { command: 'echo escaped > escaped.txt', cwd });

const toolAttempts: [string, () => Promise<unknown>][] = [
  ['fs.read ../../../../outside/canary.txt', () => viaTool('fs.read', { path: path.relative(tree, canary) })()],
  ['fs.read an absolute path outside', () => viaTool('fs.read', { path: canary })()],
  ['fs.read the repository\'s file by absolute path', () => viaTool('fs.read', { path: path.join(repo, 'app.txt') })()],
  ['fs.read .git', () => viaTool('fs.read', { path: '.git' })()],
  ['fs.read .git/config', () => viaTool('fs.read', { path: '.git/config' })()],
  ['fs.read ./.git', () => viaTool('fs.read', { path: './.git' })()],
  ['fs.read sub/../.git', () => viaTool('fs.read', { path: 'sub/../.git' })()],
  ['fs.read a symlink to .git', () => viaTool('fs.read', { path: 'git-link' })()],
  ['fs.read a symlink to the canary', () => viaTool('fs.read', { path: 'canary-link' })()],
  ['fs.read a relative symlink to the canary', () => viaTool('fs.read', { path: 'rel-canary' })()],
  ['fs.read through a symlinked directory', () => viaTool('fs.read', { path: 'outdir/canary.txt' })()],
  ['fs.read the repository\'s .git/config through a link', () => viaTool('fs.read', { path: 'repo-config' })()],
  ['fs.read through a link to the repository\'s .git', () => viaTool('fs.read', { path: 'repo-git/HEAD' })()],
  ['fs.read through a link to the repository', () => viaTool('fs.read', { path: 'repo-root/app.txt' })()],
  ['fs.read the parent through a link', () => viaTool('fs.read', { path: 'up' })()],
  ['fs.write next to the worktree through a link to the parent', () => viaTool('fs.write', { path: 'up/other.txt', content: 'x' })()],
  ['fs.write .git', () => viaTool('fs.write', { path: '.git', content: 'gitdir: /tmp\n' })()],
  ['fs.write .git/hooks/pre-commit', () => viaTool('fs.write', { path: '.git/hooks/pre-commit', content: 'x' })()],
  ['fs.write through a link to .git', () => viaTool('fs.write', { path: 'git-link', content: 'x' })()],
  ['fs.write the repository\'s config through a link', () => viaTool('fs.write', { path: 'repo-config', content: 'x', append: true })()],
  ['fs.write a hook through a link to the repository\'s .git', () => viaTool('fs.write', { path: 'repo-git/hooks/post-checkout', content: 'x' })()],
  ['fs.write over the canary through a link', () => viaTool('fs.write', { path: 'canary-link', content: 'x' })()],
  ['fs.write into a symlinked directory', () => viaTool('fs.write', { path: 'outdir/new.txt', content: 'x' })()],
  ['fs.write to a dangling link pointing outside', () => viaTool('fs.write', { path: 'dangling', content: 'x' })()],
  ['fs.write ../escaped.txt', () => viaTool('fs.write', { path: '../escaped.txt', content: 'x' })()],
  ['shell cwd ..', () => inCwd('..')()],
  ['shell cwd the repository', () => inCwd(repo)()],
  ['shell cwd a link to the repository\'s .git', () => inCwd('repo-git')()],
  ['shell cwd a symlinked directory', () => inCwd('outdir')()],
  ['code.search in the parent', () => viaTool('code.search', { text: 'canary', dir: '..' })()],
  ['code.find_references in a file outside', () => viaTool('code.find_references', { file: 'outdir/canary.txt', symbol: 'x' })()],
];

/** Checked while harmless, swapped for a link before the open. */
const raceAttempts: [string, () => Promise<unknown>][] = [
  [
    'race: a file swapped for a link to .git before a write',
    async () => {
      writeFileSync(path.join(tree, 'swap1.txt'), 'x');
      const resolved = await resolveInside(await openBoundary(tree, { name: 'worktree', deny: ['.git'] }), 'swap1.txt');
      rmSync(path.join(tree, 'swap1.txt'));
      symlinkSync('.git', path.join(tree, 'swap1.txt'));
      return (await openResolved(resolved, 'write')).close();
    },
  ],
  [
    'race: a directory swapped for a link to the repository\'s .git before creating a file in it',
    async () => {
      mkdirSync(path.join(tree, 'swap2'));
      const resolved = await resolveInside(await openBoundary(tree, { name: 'worktree', deny: ['.git'] }), 'swap2/hooks');
      renameSync(path.join(tree, 'swap2'), path.join(tree, 'swap2-moved'));
      symlinkSync(path.join(repo, '.git'), path.join(tree, 'swap2'));
      return (await openResolved(resolved, 'write')).close();
    },
  ],
];

describe('escapes from a worktree', () => {
  afterAll(() => {
    process.stdout.write(`worktree escape attempts: ${attempts}, touched outside or .git: ${touched}\n`);
  });

  test.each(toolAttempts)('runTool: %s', async (_name, run) => {
    await attempt(run, 'OutsideWorkspace');
  });

  test.each(raceAttempts)('%s', async (_name, run) => {
    await attempt(run, 'OutsideWorkspace');
  });

  test('through a plan on the dev server: refused on the first attempt, the canary untouched', async () => {
    const plan = compile(
      `
name: worktree-escapes
defaults: { retry: { maximumAttempts: 3, initialInterval: 100ms }, onFailure: skip }
steps:
  - { id: git_config, worktree: { repo: ${repo}, task: plan }, tool: fs.read, with: { path: .git/config } }
  - { id: canary, worktree: { repo: ${repo}, task: plan }, tool: fs.write, with: { path: ${canary}, content: x } }
  - { id: cwd_up, worktree: { repo: ${repo}, task: plan }, tool: shell, with: { command: "echo x > escaped.txt", cwd: .. } }
  - { id: inside, worktree: { repo: ${repo}, task: plan }, tool: fs.read, with: { path: app.txt } }
`,
      home,
    );
    const before = readFileSync(canary, 'utf8');
    const d = await withWorker(async (h) => h.client.result(await startPlan(h, plan)));
    attempts += 3;
    for (const id of ['git_config', 'canary', 'cwd_up']) {
      expect(step(d, id)).toMatchObject({ status: 'skipped', attempts: 1, error: expect.stringContaining('OutsideWorkspace') });
    }
    expect(step(d, 'inside').status).toBe('completed');
    expect(readFileSync(canary, 'utf8')).toBe(before);
    expect(readdirSync(path.dirname(tree)).filter((name) => name === 'escaped.txt')).toEqual([]);
  });
});
