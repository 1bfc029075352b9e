/**
 * Commits, resets, worktree creation and removal repaired after a kill: on real temporary
 * repositories, checked with git itself. The states a killed operation leaves are made here the
 * way git makes them (a lock file, a commit made and the index not yet written, a worktree half
 * made or half removed) with the lease its dead worker left; test/faults/merge-kill.test.ts kills
 * real workers in the middle of real commits and resets.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { commitWorktree, createWorktree, removeWorktree, resetWorktree, worktreeStatus } from '../../src/git';
import { type CheckoutWork, checkoutLeaseFile } from '../../src/git/checkout-lease';
import { takeLease } from '../../src/git/lease';
import { STALE_LOCK_MS, repairWorktree } from '../../src/git/repair';
import { thisProcess } from '../../src/process-alive';
import { applicationFailure } from '../support/failures';
import { git, tempRepository } from '../support/git-repo';

const TIMEOUT = 30_000;

/** A process that ran and is gone: its identity names no living process. */
function deadProcess() {
  const { pid } = spawnSync('true');
  return { ...thisProcess(), pid: pid as number };
}

/** A task's worktree with feature.txt written, not staged. */
async function worktree() {
  const { home, repo } = tempRepository('cadre-checkout-left-');
  const w = await createWorktree({ repo, plan: 'p', task: 't' });
  writeFileSync(path.join(w.path, 'feature.txt'), 'feature\n');
  const gitDir = git(w.path, 'rev-parse', '--absolute-git-dir');
  return { home, repo, path: w.path, branch: w.branch, base: w.baseCommit, gitDir, commonDir: path.join(repo, '.git') };
}

/** The lease a worker killed in the middle of `work` in `checkout` leaves. */
function deadLease(commonDir: string, checkout: string, work: Omit<CheckoutWork, 'checkout'>): string {
  const file = checkoutLeaseFile(commonDir, checkout);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify({ owner: deadProcess(), checkout, ...work }));
  return file;
}

/** A user's `git commit` waiting on its editor: a process named git, working in `cwd`. */
function userGit(home: string, cwd: string): ChildProcess {
  const bin = path.join(home, 'bin');
  mkdirSync(bin, { recursive: true });
  if (!existsSync(path.join(bin, 'git'))) symlinkSync(spawnSync('sh', ['-c', 'command -v sleep'], { encoding: 'utf8' }).stdout.trim(), path.join(bin, 'git'));
  return spawn(path.join(bin, 'git'), ['60'], { cwd, stdio: 'ignore' });
}

const locks = (dir: string) => readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.lock'));
const commitsOn = (repo: string, branch: string, base: string) => git(repo, 'rev-list', '--count', `${base}..${branch}`);

describe('a commit killed mid-way, repaired by its retry', () => {
  test('killed holding index.lock before it committed: the lock is removed and the retry commits, once', async () => {
    const w = await worktree();
    writeFileSync(path.join(w.gitDir, 'index.lock'), 'half an index');
    deadLease(w.commonDir, w.path, { op: 'commit', branch: w.branch, call: 'run/1', before: w.base, message: 'feature' });

    const saved = await commitWorktree({ path: w.path, message: 'feature', call: 'run/1' });
    expect(saved).toEqual({ committed: true, commit: git(w.path, 'rev-parse', 'HEAD') });
    expect(commitsOn(w.repo, w.branch, w.base)).toBe('1');
    expect(locks(w.commonDir)).toEqual([]);
    expect(git(w.path, 'status', '--porcelain')).toBe('');
  }, TIMEOUT);

  test('killed after the commit was made, holding index.lock and the branch\'s ref lock: the retry reports that commit and makes none', async () => {
    const w = await worktree();
    git(w.path, 'add', '--all');
    git(w.path, 'commit', '--quiet', '-m', 'feature  \n\n\nsecond paragraph\n');
    const made = git(w.path, 'rev-parse', 'HEAD');
    writeFileSync(path.join(w.gitDir, 'index.lock'), '');
    writeFileSync(path.join(w.commonDir, 'refs', 'heads', `${w.branch}.lock`), '');
    deadLease(w.commonDir, w.path, { op: 'commit', branch: w.branch, call: 'run/1', before: w.base, message: 'feature  \n\n\nsecond paragraph\n' });

    expect(await commitWorktree({ path: w.path, message: 'feature  \n\n\nsecond paragraph\n', call: 'run/1' })).toEqual({ committed: true, commit: made });
    expect(git(w.path, 'rev-parse', 'HEAD')).toBe(made);
    expect(locks(w.commonDir)).toEqual([]);
    // Another call has nothing to commit: the commit is not its.
    expect(await commitWorktree({ path: w.path, message: 'feature  \n\n\nsecond paragraph\n', call: 'run/2' })).toEqual({ committed: false });
    expect(commitsOn(w.repo, w.branch, w.base)).toBe('1');
  }, TIMEOUT);

  test('killed after the lease was released, before the activity completed: the retry still reports the commit; another call does not', async () => {
    const w = await worktree();
    const first = await commitWorktree({ path: w.path, message: 'feature', call: 'run/1' });
    expect(first.committed).toBe(true);
    expect(await commitWorktree({ path: w.path, message: 'feature', call: 'run/1' })).toEqual(first);
    expect(await commitWorktree({ path: w.path, message: 'feature', call: 'run/2' })).toEqual({ committed: false });
    // A later commit in the worktree does not hide it: it is found on the branch's first-parent line.
    writeFileSync(path.join(w.path, 'more.txt'), 'more\n');
    const second = await commitWorktree({ path: w.path, message: 'more', call: 'run/3' });
    expect(second.commit).not.toBe(first.commit);
    expect(await commitWorktree({ path: w.path, message: 'more', call: 'run/3' })).toEqual(second);
    expect(commitsOn(w.repo, w.branch, w.base)).toBe('2');
  }, TIMEOUT);

  test('a record naming something else than a commit is not given to git', async () => {
    const w = await worktree();
    const out = path.join(w.home, 'written-by-git');
    deadLease(w.commonDir, w.path, { op: 'commit', call: 'run/1', before: `--output=${out}`, message: 'feature' });
    expect(await commitWorktree({ path: w.path, message: 'feature', call: 'run/1' })).toMatchObject({ committed: true });
    // git would have taken it for its --output option, and written `${out}..HEAD`.
    expect(readdirSync(w.home).filter((f) => f.startsWith('written-by-git'))).toEqual([]);
  }, TIMEOUT);
});

describe('a reset killed mid-way, repaired by its retry', () => {
  test('killed holding index.lock and the ref lock, files half put back: the retry resets, locks gone', async () => {
    const w = await worktree();
    await commitWorktree({ path: w.path, message: 'feature' });
    writeFileSync(path.join(w.path, 'app.txt'), 'half written');
    writeFileSync(path.join(w.gitDir, 'index.lock'), '');
    writeFileSync(path.join(w.commonDir, 'refs', 'heads', `${w.branch}.lock`), '');
    deadLease(w.commonDir, w.path, { op: 'reset', branch: w.branch });

    expect(await resetWorktree({ path: w.path })).toEqual({ commit: w.base });
    expect(git(w.path, 'rev-parse', 'HEAD')).toBe(w.base);
    expect(git(w.path, 'status', '--porcelain')).toBe('');
    expect(readFileSync(path.join(w.path, 'app.txt'), 'utf8')).toBe('line 1\nline 2\nline 3\n');
    expect(locks(w.commonDir)).toEqual([]);
  }, TIMEOUT);
});

describe('a lock a live git may hold', () => {
  test('is never removed: the retry fails GitBusy naming the process, and hands the leftovers on; once it is gone, the retry repairs', async () => {
    const w = await worktree();
    const lock = path.join(w.gitDir, 'index.lock');
    writeFileSync(lock, '');
    const file = deadLease(w.commonDir, w.path, { op: 'commit', branch: w.branch });
    const user = userGit(w.home, w.path);
    try {
      await sleep(100);
      const busy = await applicationFailure(commitWorktree({ path: w.path, message: 'feature' }));
      expect(busy).toMatchObject({ type: 'GitBusy', nonRetryable: false });
      expect(busy.message).toContain(`process ${user.pid} in ${w.path}`);
      expect(existsSync(lock)).toBe(true);
      // The dead holder's record is back on disk for the next attempt.
      expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ op: 'commit', checkout: w.path });
      // A lock in another checkout of the repository is not this process's to hold: the main checkout's own lock goes.
      writeFileSync(path.join(w.commonDir, 'index.lock'), '');
      deadLease(w.commonDir, w.repo, { op: 'commit' });
      expect(await commitWorktree({ path: w.repo, message: 'x' }).catch((e: Error) => e.message)).toContain('not a cadre worktree');
      expect(existsSync(path.join(w.commonDir, 'index.lock'))).toBe(false);
    } finally {
      user.kill('SIGKILL');
    }
    await new Promise((resolve) => user.once('exit', resolve));
    expect(await commitWorktree({ path: w.path, message: 'feature' })).toMatchObject({ committed: true });
    expect(existsSync(lock)).toBe(false);
  }, TIMEOUT);
});

describe('the team workers\' repair of a worktree', () => {
  test('an old lock goes, unless a live git may hold it (a lock\'s age proves nothing)', async () => {
    const w = await worktree();
    const lock = path.join(w.gitDir, 'index.lock');
    writeFileSync(lock, '');
    const old = (Date.now() - 2 * STALE_LOCK_MS) / 1000;
    utimesSync(lock, old, old);
    const user = userGit(w.home, w.path);
    try {
      await sleep(100);
      expect(await repairWorktree(w.path)).toEqual({ removed: [] });
      expect(existsSync(lock)).toBe(true);
    } finally {
      user.kill('SIGKILL');
    }
    await new Promise((resolve) => user.once('exit', resolve));
    expect(await repairWorktree(w.path)).toEqual({ removed: [path.relative(w.path, lock)] });
    expect(existsSync(lock)).toBe(false);
  }, TIMEOUT);
});

describe('worktrees made and removed by killed attempts', () => {
  test('`git worktree add` killed mid-checkout (still locked "initializing", files missing, its index locked): cleared and made again', async () => {
    const { repo } = tempRepository('cadre-checkout-left-');
    const target = path.join(path.dirname(repo), '.cadre-worktrees', 'repo', 'p', 't');
    mkdirSync(path.dirname(target), { recursive: true });
    git(repo, 'worktree', 'add', '--quiet', '-b', 'cadre/p/t', target, 'main');
    const admin = git(target, 'rev-parse', '--absolute-git-dir');
    writeFileSync(path.join(admin, 'locked'), 'initializing');
    writeFileSync(path.join(admin, 'index.lock'), '');
    rmSync(path.join(target, 'app.txt'));
    deadLease(path.join(repo, '.git'), target, { op: 'create', branch: 'cadre/p/t', adding: true });

    const made = await createWorktree({ repo, plan: 'p', task: 't' });
    expect(made).toMatchObject({ path: target, branch: 'cadre/p/t', created: true });
    expect(readFileSync(path.join(target, 'app.txt'), 'utf8')).toBe('line 1\nline 2\nline 3\n');
    expect(git(repo, 'worktree', 'list', '--porcelain')).not.toContain('locked');
    expect(await worktreeStatus({ path: target })).toMatchObject({ clean: true, ahead: 0 });
  }, TIMEOUT);

  test('`git worktree remove` killed half-way: the retry finishes it and drops the merged branch, as the first attempt would have', async () => {
    const w = await worktree();
    rmSync(path.join(w.path, 'feature.txt'));
    rmSync(path.join(w.path, 'app.txt'));
    deadLease(w.commonDir, w.path, { op: 'remove', branch: w.branch, base: 'main', removing: true });

    expect(await removeWorktree({ repo: w.repo, path: w.path })).toEqual({ removed: true, reason: 'merged into main' });
    expect(existsSync(w.path)).toBe(false);
    expect(git(w.repo, 'branch', '--list', w.branch)).toBe('');
    expect(existsSync(checkoutLeaseFile(w.commonDir, w.path))).toBe(false);
  }, TIMEOUT);

  test('removed, killed before the branch was dropped: the retry drops it', async () => {
    const w = await worktree();
    git(w.repo, 'worktree', 'remove', '--force', w.path);
    deadLease(w.commonDir, w.path, { op: 'remove', branch: w.branch, base: 'main', removing: true });
    expect(await removeWorktree({ repo: w.repo, path: w.path })).toEqual({ removed: true, reason: 'merged into main' });
    expect(git(w.repo, 'branch', '--list', w.branch)).toBe('');
  }, TIMEOUT);
});

describe('checkout leases', () => {
  test('a taker killed before it repaired passes what it inherited on; each record is checked before it is believed', async () => {
    const w = await worktree();
    const file = checkoutLeaseFile(w.commonDir, w.path);
    const kind = { folder: 'checkouts', valid: (r: Record<string, unknown>) => typeof r.op === 'string', busy: () => 'busy' };
    const first = { owner: deadProcess(), op: 'commit', checkout: w.path };
    writeFileSync(file, JSON.stringify({ owner: deadProcess(), op: 'reset', checkout: w.path, inherited: [first] }));
    const lease = await takeLease(file, kind, w.path, { op: 'create' }, 200);
    expect(lease.leftovers.map((l) => l.op)).toEqual(['commit', 'reset']);
    // Its own record carries them until they are repaired.
    expect(JSON.parse(readFileSync(file, 'utf8')).inherited.map((l: { op: string }) => l.op)).toEqual(['commit', 'reset']);
    await lease.repaired();
    expect(JSON.parse(readFileSync(file, 'utf8')).inherited).toBeUndefined();
    await lease.release();
    expect(existsSync(file)).toBe(false);

    writeFileSync(file, JSON.stringify({ owner: deadProcess(), op: 'reset', checkout: w.path, inherited: [{ op: 'no owner' }] }));
    expect((await takeLease(file, kind, w.path, { op: 'create' }, 200)).leftovers).toEqual([]);
  }, TIMEOUT);
});

describe('reads', () => {
  test('git status refreshes the index in memory only: a status killed with its worker leaves no index.lock', async () => {
    const w = await worktree();
    const index = path.join(w.gitDir, 'index');
    // app.txt touched: its index entry is stale, which git status would otherwise write back.
    const later = new Date(Date.now() + 5000);
    utimesSync(path.join(w.path, 'app.txt'), later, later);
    const before = statSync(index).mtimeMs;
    await sleep(20);
    expect(await worktreeStatus({ path: w.path })).toMatchObject({ untracked: ['feature.txt'] });
    expect(statSync(index).mtimeMs).toBe(before);
  }, TIMEOUT);
});
