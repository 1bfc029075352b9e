/**
 * Merges repaired after a kill: on real temporary repositories, checked with git itself. The states a killed merge leaves are made here the way
 * git makes them (a lock file, MERGE_HEAD, files of the merge written, the merge commit made);
 * test/faults/merge-kill.test.ts kills real workers in the middle of real merges.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { commitWorktree, createWorktree, mergeWorktree } from '../../src/git';
import { type LeaseRecord, leaseFile, takeMergeLease } from '../../src/git/merge-lease';
import { defaultWorktreeBase } from '../../src/git/names';
import { isProcessAlive, thisProcess } from '../../src/process-alive';
import { applicationFailure } from '../support/failures';
import { git, tempRepository } from '../support/git-repo';

const TIMEOUT = 30_000;

/** A process that ran and is gone: its identity names no living process. */
function deadProcess() {
  const { pid } = spawnSync('true');
  return { ...thisProcess(), pid: pid as number };
}

/** A repository with a task branch (feature.txt added, app.txt changed) ready to merge into main. */
async function taskReady() {
  const { home, repo } = tempRepository('cadre-merge-left-');
  const w = await createWorktree({ repo, plan: 'p', task: 't' });
  writeFileSync(path.join(w.path, 'feature.txt'), 'feature\n');
  writeFileSync(path.join(w.path, 'app.txt'), 'line 1\nline 2\nline 3\nline 4\n');
  const tip = (await commitWorktree({ path: w.path, message: 'feature' })).commit as string;
  return { home, repo, branch: w.branch, tip, before: git(repo, 'rev-parse', 'main') };
}

/** The lease a worker killed mid-merge leaves. */
function deadLease(repo: string, record: Omit<LeaseRecord, 'owner'>): void {
  const file = leaseFile(path.join(repo, '.git'), record.into);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify({ owner: deadProcess(), ...record }));
}

describe('a process identity', () => {
  test('names this process alive; a dead pid, a later process with the same pid or another boot, dead; another host, alive', () => {
    const me = thisProcess();
    expect(isProcessAlive(me)).toBe(true);
    expect(isProcessAlive(deadProcess())).toBe(false);
    expect(isProcessAlive({ ...me, start: `${me.start}0` })).toBe(false);
    expect(isProcessAlive({ ...me, boot: 'another boot' })).toBe(false);
    expect(isProcessAlive({ ...deadProcess(), host: `not-${os.hostname()}` })).toBe(true);
  });
});

describe('merge leases', () => {
  test('one merge into a branch at a time; a dead holder\'s lease is taken over with what it said; a foreign one is never', async () => {
    const { repo } = tempRepository('cadre-lease-');
    const common = path.join(repo, '.git');
    const first = await takeMergeLease(common, 'a', 'main');
    expect(first.leftovers).toEqual([]);
    await first.note({ checkout: repo, before: 'x', tip: 'y' });
    const busy = await applicationFailure(takeMergeLease(common, 'b', 'main', 200));
    expect(busy).toMatchObject({ type: 'GitBusy', nonRetryable: false });
    expect(busy.message).toContain(`another merge into main is under way (a, by process ${process.pid}`);
    // Another target is another lease.
    await (await takeMergeLease(common, 'b', 'other', 200)).release();
    await first.release();
    await (await takeMergeLease(common, 'b', 'main', 200)).release();

    const file = leaseFile(common, 'main');
    const left = { owner: deadProcess(), branch: 'a', into: 'main', checkout: repo, before: 'x', tip: 'y' };
    writeFileSync(file, JSON.stringify(left));
    const after = await takeMergeLease(common, 'a', 'main', 200);
    expect(after.leftovers).toEqual([left]);
    await after.release();

    writeFileSync(file, '{"owner": "not a lease"');
    const overGarbage = await takeMergeLease(common, 'a', 'main', 200);
    expect(overGarbage.leftovers).toEqual([]);
    await overGarbage.release();

    writeFileSync(file, JSON.stringify({ ...left, owner: { ...deadProcess(), host: `not-${os.hostname()}` } }));
    expect(await applicationFailure(takeMergeLease(common, 'a', 'main', 200))).toMatchObject({ type: 'GitBusy' });
  }, TIMEOUT);
});

describe('a merge killed mid-way, repaired by the next', () => {
  test('MERGE_HEAD and a stale index.lock: the merge is undone, then made once', async () => {
    const { repo, branch, tip, before } = await taskReady();
    git(repo, 'merge', '--quiet', '--no-ff', '--no-commit', branch);
    writeFileSync(path.join(repo, '.git', 'index.lock'), '');
    deadLease(repo, { branch, into: 'main', checkout: repo, before, tip });

    const merged = await mergeWorktree({ repo, branch });
    expect(merged).toEqual({ into: 'main', commit: git(repo, 'rev-parse', 'main'), upToDate: false });
    expect(git(repo, 'rev-parse', 'main^1', 'main^2').split('\n')).toEqual([before, tip]);
    expect(git(repo, 'status', '--porcelain')).toBe('');
    expect(['MERGE_HEAD', 'index.lock', 'ORIG_HEAD.lock'].filter((f) => existsSync(path.join(repo, '.git', f)))).toEqual([]);
    expect(existsSync(leaseFile(path.join(repo, '.git'), 'main'))).toBe(false);
  }, TIMEOUT);

  test('files of the merge written, no MERGE_HEAD yet: exactly those are put back, and someone else\'s change stops the merge', async () => {
    const { repo, branch, tip, before } = await taskReady();
    // git killed while checking the merge out: some files written, its index still in index.lock.
    writeFileSync(path.join(repo, 'app.txt'), 'line 1\nline 2\nline 3\nline 4\n');
    writeFileSync(path.join(repo, 'feature.txt'), 'feature\n');
    writeFileSync(path.join(repo, '.git', 'index.lock'), 'half an index');
    writeFileSync(path.join(repo, 'notes.txt'), 'mine, written after the kill\n');
    deadLease(repo, { branch, into: 'main', checkout: repo, before, tip });

    const refused = await applicationFailure(mergeWorktree({ repo, branch }));
    expect(refused).toMatchObject({ type: 'WorktreeDirty', nonRetryable: true });
    expect(refused.message).toContain('(notes.txt)');
    expect(git(repo, 'status', '--porcelain')).toBe('?? notes.txt');
    expect(readFileSync(path.join(repo, 'app.txt'), 'utf8')).toBe('line 1\nline 2\nline 3\n');
    expect(git(repo, 'rev-parse', 'main')).toBe(before);

    writeFileSync(path.join(repo, 'notes.txt'), '');
    git(repo, 'add', 'notes.txt');
    git(repo, 'commit', '--quiet', '-m', 'notes');
    expect(await mergeWorktree({ repo, branch })).toMatchObject({ upToDate: false });
    expect(git(repo, 'show', 'main:feature.txt')).toBe('feature');
  }, TIMEOUT);

  test('the merge commit made, MERGE_HEAD not yet removed: kept, reported, not merged again', async () => {
    const { repo, branch, tip, before } = await taskReady();
    git(repo, 'merge', '--no-ff', '--quiet', '-m', `Merge ${branch} into main`, branch);
    const made = git(repo, 'rev-parse', 'main');
    writeFileSync(path.join(repo, '.git', 'MERGE_HEAD'), `${tip}\n`);
    deadLease(repo, { branch, into: 'main', checkout: repo, before, tip });

    expect(await mergeWorktree({ repo, branch })).toEqual({ into: 'main', commit: made, upToDate: false });
    expect(git(repo, 'rev-parse', 'main')).toBe(made);
    expect(existsSync(path.join(repo, '.git', 'MERGE_HEAD'))).toBe(false);
    // Asked again (the activity retried after it had done it all): the same answer.
    expect(await mergeWorktree({ repo, branch })).toEqual({ into: 'main', commit: made, upToDate: false });
    expect(git(repo, 'rev-list', '--count', '--merges', `${before}..main`)).toBe('1');
  }, TIMEOUT);

  test('a temporary checkout the killed merge made is removed; one the lease names outside cadre\'s is not touched', async () => {
    const { repo, branch, tip } = await taskReady();
    git(repo, 'checkout', '--quiet', '--detach');
    const leftover = path.join(defaultWorktreeBase(repo), '.merge-AbC123');
    git(repo, 'worktree', 'add', '--quiet', leftover, 'main');
    git(leftover, 'merge', '--quiet', '--no-ff', '--no-commit', branch);
    deadLease(repo, { branch, into: 'main', checkout: leftover, temporary: true });

    const merged = await mergeWorktree({ repo, branch });
    expect(merged).toMatchObject({ into: 'main', upToDate: false });
    expect(git(repo, 'rev-parse', 'main^2')).toBe(tip);
    expect(existsSync(leftover)).toBe(false);
    expect(git(repo, 'worktree', 'list', '--porcelain')).not.toContain('.merge-');

    const outside = path.join(path.dirname(repo), 'keep', '.merge-AbC123');
    mkdirSync(outside, { recursive: true });
    writeFileSync(path.join(outside, 'precious.txt'), 'x');
    deadLease(repo, { branch, into: 'main', checkout: outside, temporary: true });
    expect(await mergeWorktree({ repo, branch })).toMatchObject({ upToDate: false });
    expect(readFileSync(path.join(outside, 'precious.txt'), 'utf8')).toBe('x');
  }, TIMEOUT);
});
