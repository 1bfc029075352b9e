/** Worktree operations on real temporary repositories, checked with git itself. */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { commitWorktree, createWorktree, listWorktrees, mergeWorktree, removeWorktree, resetWorktree, worktreeStatus } from '../../src/git';
import { INLINE_OUTPUT_LIMITS, defaultToolSandbox } from '../../src/activities/tools/context';
import { runTool } from '../../src/activities/tools/run-tool';
import { snapshotWorktree } from '../../src/git/snapshot';
import { applicationFailure } from '../support/failures';
import { git, tempRepository } from '../support/git-repo';

const repository = () => tempRepository().repo;

const worktreeCount = (repo: string) => git(repo, 'worktree', 'list', '--porcelain').split('\n').filter((l) => l.startsWith('worktree ')).length;

describe('git worktrees', () => {
  test('creation is at <base>/<plan>/<task> beside the repository, on cadre/<plan>/<task>, and idempotent', async () => {
    const repo = repository();
    const first = await createWorktree({ repo, plan: 'fix-bugs', task: 'parser' });
    expect(first).toMatchObject({ path: path.join(path.dirname(repo), '.cadre-worktrees', 'repo', 'fix-bugs', 'parser'), branch: 'cadre/fix-bugs/parser', base: 'main', created: true });
    expect(first.baseCommit).toBe(git(repo, 'rev-parse', 'main'));
    expect(git(first.path, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('cadre/fix-bugs/parser');
    const again = await createWorktree({ repo, plan: 'fix-bugs', task: 'parser' });
    expect(again).toEqual({ ...first, created: false });
    expect(worktreeCount(repo)).toBe(2);
  });

  test('CADRE_WORKTREE_DIR moves the default base', async () => {
    const repo = repository();
    const elsewhere = path.join(path.dirname(repo), 'elsewhere');
    process.env.CADRE_WORKTREE_DIR = elsewhere;
    try {
      expect((await createWorktree({ repo, plan: 'p', task: 't' })).path).toBe(path.join(elsewhere, 'repo', 'p', 't'));
    } finally {
      delete process.env.CADRE_WORKTREE_DIR;
    }
  });

  test('a crash between `worktree add` and the activity completing: the retry adopts it, no second worktree', async () => {
    const repo = repository();
    const target = path.join(path.dirname(repo), '.cadre-worktrees', 'repo', 'p', 't');
    mkdirSync(path.dirname(target), { recursive: true });
    git(repo, 'worktree', 'add', '--quiet', '-b', 'cadre/p/t', target, 'main');
    const adopted = await createWorktree({ repo, plan: 'p', task: 't' });
    expect(adopted).toMatchObject({ path: target, created: false, base: 'main' });
    expect(worktreeCount(repo)).toBe(2);
    // The base was recorded on adoption, so status works.
    expect(await worktreeStatus({ path: target })).toMatchObject({ clean: true, ahead: 0 });
  });

  test('leftovers: an empty directory and a deleted worktree are repaired; a directory with files is refused by name', async () => {
    const repo = repository();
    const base = path.join(path.dirname(repo), '.cadre-worktrees', 'repo', 'p');
    mkdirSync(path.join(base, 'empty'), { recursive: true });
    expect((await createWorktree({ repo, plan: 'p', task: 'empty' })).created).toBe(true);
    const gone = await createWorktree({ repo, plan: 'p', task: 'gone' });
    rmSync(gone.path, { recursive: true, force: true });
    expect(await createWorktree({ repo, plan: 'p', task: 'gone' })).toMatchObject({ created: true, path: gone.path });
    mkdirSync(path.join(base, 'full'));
    writeFileSync(path.join(base, 'full', 'notes.txt'), 'mine');
    const err = await applicationFailure(createWorktree({ repo, plan: 'p', task: 'full' }));
    expect(err).toMatchObject({ type: 'WorktreeConflict', nonRetryable: true });
    expect(err.message).toContain(path.join(base, 'full'));
    expect(readFileSync(path.join(base, 'full', 'notes.txt'), 'utf8')).toBe('mine');
  });

  test('names are sanitised into readable, distinct components that stay under the base', async () => {
    const repo = repository();
    const baseDir = path.join(path.dirname(repo), 'trees');
    const odd = await createWorktree({ repo, plan: '../../etc', task: 'a b/ü..x', baseDir });
    const other = await createWorktree({ repo, plan: '../../etc', task: 'a b/ü.x', baseDir });
    for (const w of [odd, other]) {
      expect(path.relative(baseDir, w.path).split(path.sep)).toHaveLength(2);
      expect(path.relative(baseDir, w.path).startsWith('..')).toBe(false);
      expect(git(repo, 'check-ref-format', '--branch', w.branch)).toBe(w.branch);
    }
    expect(odd.path).not.toBe(other.path);
    expect(odd.path).toMatch(/trees\/etc-[0-9a-f]{8}\/a-b-.*x-[0-9a-f]{8}$/);
    const inside = await applicationFailure(createWorktree({ repo, plan: 'p', task: 't', baseDir: path.join(repo, 'sub') }));
    expect(inside).toMatchObject({ type: 'BadToolInput' });
    expect((await applicationFailure(createWorktree({ repo, plan: '', task: 't' }))).message).toBe('plan: must be a non-empty name');
    expect((await applicationFailure(createWorktree({ repo: path.dirname(repo), plan: 'p', task: 't' }))).message).toContain('is not a git repository');
  });

  test('status, commit and reset', async () => {
    const repo = repository();
    const w = await createWorktree({ repo, plan: 'p', task: 't' });
    writeFileSync(path.join(w.path, 'app.txt'), 'line 1\nchanged\nline 3\n');
    writeFileSync(path.join(w.path, 'new.txt'), 'new');
    writeFileSync(path.join(w.path, 'staged.txt'), 'staged');
    git(w.path, 'add', 'staged.txt');
    expect(await worktreeStatus({ path: w.path })).toMatchObject({ clean: false, staged: ['staged.txt'], changed: ['app.txt'], untracked: ['new.txt'], ahead: 0, behind: 0 });
    const done = await commitWorktree({ path: w.path, message: 'work' });
    expect(done.committed).toBe(true);
    expect(git(w.path, 'log', '-1', '--format=%H %s')).toBe(`${done.commit} work`);
    expect(await commitWorktree({ path: w.path, message: 'nothing' })).toEqual({ committed: false });
    git(repo, 'commit', '--quiet', '--allow-empty', '-m', 'main moves on');
    expect(await worktreeStatus({ path: w.path })).toMatchObject({ clean: true, ahead: 1, behind: 1 });
    writeFileSync(path.join(w.path, 'stray.txt'), 'x');
    expect(await resetWorktree({ path: w.path })).toEqual({ commit: w.baseCommit });
    expect(git(w.path, 'rev-parse', 'HEAD')).toBe(w.baseCommit);
    expect(existsSync(path.join(w.path, 'stray.txt'))).toBe(false);
    expect((await applicationFailure(worktreeStatus({ path: repo }))).message).toContain('is not a cadre worktree');
    // The same as a plan's tool, in the step's worktree.
    writeFileSync(path.join(w.path, 'again.txt'), 'x');
    const ctx = { workspace: w.path, worktree: true, stepId: 's', attempt: 1, signal: new AbortController().signal, limits: INLINE_OUTPUT_LIMITS, sandbox: defaultToolSandbox() };
    expect(await runTool('git.reset', {}, ctx)).toEqual({ commit: w.baseCommit });
    expect(existsSync(path.join(w.path, 'again.txt'))).toBe(false);
    expect((await applicationFailure(runTool('git.reset', {}, { ...ctx, worktree: false }))).message).toBe('git.reset runs in a worktree: give the step a "worktree"');
  });

  test('a worktree of a clone made again in another clone: from its pushed branch, counting from the commit it first started from', async () => {
    const { home, repo } = tempRepository();
    const origin = path.join(home, 'origin.git');
    git(home, 'clone', '--quiet', '--bare', repo, origin);
    const cloneOf = (name: string, branch: string) => {
      git(home, 'clone', '--quiet', '--branch', branch, origin, name);
      return path.join(home, name);
    };
    const first = cloneOf('first', 'main');
    git(first, 'checkout', '--quiet', '-b', 'run');
    const resume = { remoteBranch: 'cadre/worktree/r/t' };
    const made = await createWorktree({ repo: first, plan: 'p', task: 't', baseDir: path.join(home, 'trees-1'), resume });
    writeFileSync(path.join(made.path, 'wt.txt'), 'worked');
    git(made.path, 'add', '.');
    git(made.path, 'commit', '--quiet', '-m', 'worktree work');
    // The run's branch moves on past where the worktree started, and both are pushed.
    git(first, 'commit', '--quiet', '--allow-empty', '-m', 'a later step');
    git(first, 'push', '--quiet', 'origin', 'run', `${made.branch}:refs/heads/${resume.remoteBranch}`);
    const second = cloneOf('second', 'run');
    const again = await createWorktree({ repo: second, plan: 'p', task: 't', baseDir: path.join(home, 'trees-2'), resume: { ...resume, baseCommit: made.baseCommit } });
    expect(again).toMatchObject({ branch: made.branch, base: 'run', baseCommit: made.baseCommit });
    expect(readFileSync(path.join(again.path, 'wt.txt'), 'utf8')).toBe('worked');
    expect(await worktreeStatus({ path: again.path })).toMatchObject({ clean: true, ahead: 1 });
    // Never pushed: made from the base, as the first time. A start the clone does not have is refused by name.
    const fresh = await createWorktree({ repo: second, plan: 'p', task: 'other', baseDir: path.join(home, 'trees-2'), resume: { remoteBranch: 'cadre/worktree/r/other' } });
    expect(fresh.baseCommit).toBe(git(second, 'rev-parse', 'run'));
    const unknown = '0'.repeat(40);
    expect((await applicationFailure(createWorktree({ repo: second, plan: 'p', task: 'x', baseDir: path.join(home, 'trees-2'), resume: { remoteBranch: 'cadre/worktree/r/x', baseCommit: unknown } }))).message).toContain(
      `the commit ${unknown} the worktree started from is not in this clone`,
    );
  });

  test('a snapshot keeps a worktree as a step left it, untouched; a fork\'s worktree of its own starts from it, its files uncommitted as they were', async () => {
    const repo = repository();
    const made = await createWorktree({ repo, plan: 'p', task: 't' });
    writeFileSync(path.join(made.path, 'app.txt'), 'line 1\n');
    await commitWorktree({ path: made.path, message: 'shorter' });
    writeFileSync(path.join(made.path, 'app.txt'), 'line 1\nchanged\n');
    writeFileSync(path.join(made.path, 'new.txt'), 'new\n');
    writeFileSync(path.join(made.path, 'gone.txt'), 'x\n');
    git(made.path, 'add', 'gone.txt');
    git(made.path, 'commit', '--quiet', '-m', 'gone next');
    rmSync(path.join(made.path, 'gone.txt'));
    const status = git(made.path, 'status', '--porcelain');
    const head = git(made.path, 'rev-parse', 'HEAD');
    const snapshot = await snapshotWorktree({ path: made.path, run: 'run-1', step: 'edit' });
    // Nothing of the worktree moved: its branch, its index, its files.
    expect(git(made.path, 'status', '--porcelain')).toBe(status);
    expect(git(made.path, 'rev-parse', 'HEAD')).toBe(head);
    expect(git(repo, 'rev-parse', 'refs/cadre/steps/run-1/edit')).toBe(snapshot);
    expect(git(repo, 'rev-parse', `${snapshot}^`)).toBe(head);
    // The old worktree goes on; the fork's is its own, named for its run.
    writeFileSync(path.join(made.path, 'later.txt'), 'after the snapshot\n');
    const fork = { run: 'fork-1', snapshot, baseCommit: made.baseCommit };
    const forked = await createWorktree({ repo, plan: 'p', task: 't', fork });
    expect(forked).toMatchObject({ branch: 'cadre/p/t@fork-1', baseCommit: made.baseCommit, created: true });
    expect(git(forked.path, 'rev-parse', 'HEAD')).toBe(head);
    expect(git(forked.path, 'status', '--porcelain')).toBe(status);
    expect(readFileSync(path.join(forked.path, 'app.txt'), 'utf8')).toBe('line 1\nchanged\n');
    expect(existsSync(path.join(forked.path, 'later.txt'))).toBe(false);
    // A retry adopts it without touching what a step did since; one killed before its record was written restores again.
    writeFileSync(path.join(forked.path, 'new.txt'), 'edited in the fork\n');
    expect(await createWorktree({ repo, plan: 'p', task: 't', fork })).toMatchObject({ created: false });
    expect(readFileSync(path.join(forked.path, 'new.txt'), 'utf8')).toBe('edited in the fork\n');
    rmSync(path.join(git(forked.path, 'rev-parse', '--absolute-git-dir'), 'cadre.json'));
    await createWorktree({ repo, plan: 'p', task: 't', fork });
    expect(readFileSync(path.join(forked.path, 'new.txt'), 'utf8')).toBe('new\n');
    expect(git(made.path, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('cadre/p/t');
    const lost = await applicationFailure(createWorktree({ repo, plan: 'p', task: 'u', fork: { run: 'fork-2', snapshot: '0'.repeat(40) } }));
    expect(lost).toMatchObject({ type: 'WorktreeConflict', message: expect.stringContaining(`the snapshot ${'0'.repeat(40)} of the worktree to restore is not in this repository`) });
  });

  test('reset to a base given by the caller, or a refusal naming it', async () => {
    const repo = repository();
    const w = await createWorktree({ repo, plan: 'p', task: 't' });
    writeFileSync(path.join(w.path, 'one.txt'), '1');
    const one = await commitWorktree({ path: w.path, message: 'one' });
    writeFileSync(path.join(w.path, 'two.txt'), '2');
    await commitWorktree({ path: w.path, message: 'two' });
    writeFileSync(path.join(w.path, 'stray.txt'), 'x');
    expect(await resetWorktree({ path: w.path, base: 'HEAD~1' })).toEqual({ commit: one.commit });
    expect(git(w.path, 'rev-parse', 'HEAD')).toBe(one.commit);
    expect(git(w.path, 'status', '--porcelain')).toBe('');
    const bad = await applicationFailure(resetWorktree({ path: w.path, base: 'no-such-ref' }));
    expect(bad).toMatchObject({ type: 'BadToolInput', nonRetryable: true });
    expect(bad.message).toContain('base: "no-such-ref"');
    expect(git(w.path, 'rev-parse', 'HEAD')).toBe(one.commit);
  });

  test('a lock held by another git process is a retryable failure; the retry succeeds once it is gone', async () => {
    const repo = repository();
    const w = await createWorktree({ repo, plan: 'p', task: 't' });
    writeFileSync(path.join(w.path, 'work.txt'), 'work');
    const lock = path.resolve(w.path, git(w.path, 'rev-parse', '--git-path', 'index.lock'));
    writeFileSync(lock, '');
    const busy = await applicationFailure(commitWorktree({ path: w.path, message: 'work' }));
    expect(busy).toMatchObject({ type: 'GitBusy', nonRetryable: false });
    expect(busy.message).toContain('index.lock');
    expect(git(w.path, 'rev-parse', 'HEAD')).toBe(w.baseCommit);
    rmSync(lock);
    expect(await commitWorktree({ path: w.path, message: 'work' })).toMatchObject({ committed: true });
  });

  test('a merge that meets a held lock is retryable and changes nothing; the retry merges', async () => {
    const repo = repository();
    const w = await createWorktree({ repo, plan: 'p', task: 't' });
    writeFileSync(path.join(w.path, 'w.txt'), 'w');
    const done = await commitWorktree({ path: w.path, message: 'w' });
    const mainBefore = git(repo, 'rev-parse', 'main');
    const lock = path.join(repo, '.git', 'index.lock');
    writeFileSync(lock, '');
    const busy = await applicationFailure(mergeWorktree({ repo, branch: w.branch }));
    expect(busy).toMatchObject({ type: 'GitBusy', nonRetryable: false });
    expect(git(repo, 'rev-parse', 'main')).toBe(mainBefore);
    expect(git(repo, 'rev-parse', w.branch)).toBe(done.commit);
    rmSync(lock);
    expect(await mergeWorktree({ repo, branch: w.branch })).toMatchObject({ into: 'main', upToDate: false });
    expect(readFileSync(path.join(repo, 'w.txt'), 'utf8')).toBe('w');
    expect(git(repo, 'status', '--porcelain')).toBe('');
  });

  test('a merge that git left half-done on a lock is cleared by the retry; anyone else\'s merge in progress is refused', async () => {
    const repo = repository();
    const mine = await createWorktree({ repo, plan: 'p', task: 'mine' });
    const theirs = await createWorktree({ repo, plan: 'p', task: 'theirs' });
    for (const w of [mine, theirs]) {
      writeFileSync(path.join(w.path, `${w.branch.split('/')[2]}.txt`), 'x');
      await commitWorktree({ path: w.path, message: 'x' });
    }
    const mainBefore = git(repo, 'rev-parse', 'main');
    // What a merge meeting a held lock leaves: MERGE_HEAD, and an abort that failed on the lock.
    const leaveHalfMerge = (branch: string) => {
      const lock = path.join(repo, '.git', 'index.lock');
      writeFileSync(lock, '');
      expect(() => git(repo, 'merge', '--no-ff', '--no-edit', branch)).toThrow();
      rmSync(lock);
      expect(existsSync(path.join(repo, '.git', 'MERGE_HEAD'))).toBe(true);
    };

    leaveHalfMerge(theirs.branch);
    const refused = await applicationFailure(mergeWorktree({ repo, branch: mine.branch }));
    expect(refused).toMatchObject({ type: 'WorktreeConflict', nonRetryable: true });
    expect(refused.message).toContain(`${repo} has a merge of ${git(repo, 'rev-parse', theirs.branch)} in progress`);
    expect(existsSync(path.join(repo, '.git', 'MERGE_HEAD'))).toBe(true);
    expect(git(repo, 'rev-parse', 'main')).toBe(mainBefore);
    git(repo, 'merge', '--abort');

    leaveHalfMerge(mine.branch);
    expect(await mergeWorktree({ repo, branch: mine.branch })).toMatchObject({ into: 'main', upToDate: false });
    expect(git(repo, 'rev-parse', 'main^2')).toBe(git(repo, 'rev-parse', mine.branch));
    expect(existsSync(path.join(repo, '.git', 'MERGE_HEAD'))).toBe(false);
    expect(git(repo, 'status', '--porcelain')).toBe('');
  });

  test('commits and merges use the repository identity, and cadre for whatever is not configured', async () => {
    // No global git config: a home without one. (simple-git drops ambient GIT_* variables such as
    // GIT_CONFIG_GLOBAL before it spawns git, so HOME is what moves the global config away.)
    const saved = { home: process.env.HOME, xdg: process.env.XDG_CONFIG_HOME };
    const emptyHome = mkdtempSync(path.join(os.tmpdir(), 'cadre-empty-home-'));
    process.env.HOME = emptyHome;
    process.env.XDG_CONFIG_HOME = emptyHome;
    const author = (dir: string, rev: string) => git(dir, 'log', '-1', '--format=%an <%ae> / %cn <%ce>', rev);
    try {
      const bare = repository();
      const w = await createWorktree({ repo: bare, plan: 'p', task: 't' });
      writeFileSync(path.join(w.path, 'a.txt'), 'a');
      const done = await commitWorktree({ path: w.path, message: 'a' });
      expect(author(bare, done.commit as string)).toBe('cadre <cadre@localhost> / cadre <cadre@localhost>');
      const merged = await mergeWorktree({ repo: bare, branch: w.branch });
      expect(author(bare, merged.commit)).toBe('cadre <cadre@localhost> / cadre <cadre@localhost>');

      const named = repository();
      execFileSync('git', ['config', 'user.name', 'Alice'], { cwd: named });
      const n = await createWorktree({ repo: named, plan: 'p', task: 't' });
      writeFileSync(path.join(n.path, 'a.txt'), 'a');
      expect(author(named, (await commitWorktree({ path: n.path, message: 'a' })).commit as string)).toBe('Alice <cadre@localhost> / Alice <cadre@localhost>');

      execFileSync('git', ['config', 'user.email', 'alice@example.com'], { cwd: named });
      writeFileSync(path.join(n.path, 'b.txt'), 'b');
      expect(author(named, (await commitWorktree({ path: n.path, message: 'b' })).commit as string)).toBe('Alice <alice@example.com> / Alice <alice@example.com>');
    } finally {
      for (const [key, value] of [['HOME', saved.home], ['XDG_CONFIG_HOME', saved.xdg]] as const) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
      rmSync(emptyHome, { recursive: true, force: true });
    }
  });

  test('two tasks on two branches, both merged into main', async () => {
    const repo = repository();
    const a = await createWorktree({ repo, plan: 'p', task: 'a' });
    const b = await createWorktree({ repo, plan: 'p', task: 'b' });
    writeFileSync(path.join(a.path, 'a.txt'), 'from a');
    writeFileSync(path.join(b.path, 'b.txt'), 'from b');
    await commitWorktree({ path: a.path, message: 'a' });
    await commitWorktree({ path: b.path, message: 'b' });
    // main is checked out in the repository itself: the merges happen there.
    expect(await mergeWorktree({ repo, branch: a.branch })).toMatchObject({ into: 'main', upToDate: false });
    expect(await mergeWorktree({ repo, branch: b.branch })).toMatchObject({ into: 'main', upToDate: false });
    expect(readFileSync(path.join(repo, 'a.txt'), 'utf8')).toBe('from a');
    expect(readFileSync(path.join(repo, 'b.txt'), 'utf8')).toBe('from b');
    expect(await mergeWorktree({ repo, branch: a.branch })).toMatchObject({ upToDate: true });
  });

  test('two tasks editing the same line: a conflict naming the file, both branches and main untouched', async () => {
    const repo = repository();
    git(repo, 'checkout', '--quiet', '--detach');
    const a = await createWorktree({ repo, plan: 'p', task: 'a', base: 'main' });
    const b = await createWorktree({ repo, plan: 'p', task: 'b', base: 'main' });
    writeFileSync(path.join(a.path, 'app.txt'), 'line 1\nA\nline 3\n');
    writeFileSync(path.join(b.path, 'app.txt'), 'line 1\nB\nline 3\n');
    const ca = await commitWorktree({ path: a.path, message: 'a' });
    const cb = await commitWorktree({ path: b.path, message: 'b' });
    // main is checked out nowhere: the merges use a temporary checkout.
    await mergeWorktree({ repo, branch: a.branch });
    const mainAfterA = git(repo, 'rev-parse', 'main');
    const err = await applicationFailure(mergeWorktree({ repo, branch: b.branch }));
    expect(err).toMatchObject({ type: 'MergeConflict', nonRetryable: true });
    expect(err.message).toContain('conflicts in app.txt');
    expect(err.details?.[0]).toMatchObject({ files: ['app.txt'] });
    expect(git(repo, 'rev-parse', 'main')).toBe(mainAfterA);
    expect(git(repo, 'rev-parse', a.branch)).toBe(ca.commit);
    expect(git(repo, 'rev-parse', b.branch)).toBe(cb.commit);
    expect(git(repo, 'show', 'main:app.txt')).toBe('line 1\nA\nline 3');
    // The temporary checkout is gone.
    expect(worktreeCount(repo)).toBe(3);
  });

  test('a conflict in a checkout of the target leaves it clean, with no merge in progress', async () => {
    const repo = repository();
    const w = await createWorktree({ repo, plan: 'p', task: 'a' });
    writeFileSync(path.join(w.path, 'app.txt'), 'line 1\nA\nline 3\n');
    await commitWorktree({ path: w.path, message: 'a' });
    writeFileSync(path.join(repo, 'app.txt'), 'line 1\nM\nline 3\n');
    git(repo, 'commit', '--quiet', '-am', 'main edits');
    const err = await applicationFailure(mergeWorktree({ repo, branch: w.branch }));
    expect(err.type).toBe('MergeConflict');
    expect(git(repo, 'status', '--porcelain')).toBe('');
    expect(existsSync(path.join(repo, '.git', 'MERGE_HEAD'))).toBe(false);
    writeFileSync(path.join(repo, 'dirty.txt'), 'x');
    expect((await applicationFailure(mergeWorktree({ repo, branch: w.branch }))).type).toBe('WorktreeDirty');
  });

  test('removal refuses uncommitted work, keeps unmerged commits on their branch, and is idempotent', async () => {
    const repo = repository();
    const w = await createWorktree({ repo, plan: 'p', task: 'dirty' });
    writeFileSync(path.join(w.path, 'work.txt'), 'unsaved');
    const refused = await applicationFailure(removeWorktree({ repo, path: w.path }));
    expect(refused).toMatchObject({ type: 'WorktreeDirty', nonRetryable: true });
    expect(refused.message).toContain('work.txt');
    expect(existsSync(path.join(w.path, 'work.txt'))).toBe(true);

    await commitWorktree({ path: w.path, message: 'saved' });
    const kept = await removeWorktree({ repo, path: w.path });
    expect(kept).toMatchObject({ removed: true, keptBranch: 'cadre/p/dirty' });
    expect(existsSync(w.path)).toBe(false);
    expect(git(repo, 'show', 'cadre/p/dirty:work.txt')).toBe('unsaved');
    expect(await removeWorktree({ repo, path: w.path })).toEqual({ removed: false, reason: 'already gone' });
    // The same task again picks its kept branch back up.
    expect(await createWorktree({ repo, plan: 'p', task: 'dirty' })).toMatchObject({ created: true });
    expect(readFileSync(path.join(w.path, 'work.txt'), 'utf8')).toBe('unsaved');

    const scratch = await createWorktree({ repo, plan: 'p', task: 'scratch' });
    writeFileSync(path.join(scratch.path, 'junk.txt'), 'junk');
    expect(await removeWorktree({ repo, path: scratch.path, discard: true })).toMatchObject({ removed: true, reason: 'merged into main' });
    expect(git(repo, 'branch', '--list', 'cadre/p/scratch')).toBe('');
    expect((await applicationFailure(removeWorktree({ repo, path: repo }))).message).toContain('is not a worktree cadre made');
  });

  test('the list shows cadre worktrees only, with their state', async () => {
    const repo = repository();
    git(repo, 'worktree', 'add', '--quiet', '-b', 'mine', path.join(path.dirname(repo), 'mine'));
    const clean = await createWorktree({ repo, plan: 'p', task: 'clean' });
    const dirty = await createWorktree({ repo, plan: 'p', task: 'dirty' });
    const ahead = await createWorktree({ repo, plan: 'p', task: 'ahead' });
    writeFileSync(path.join(dirty.path, 'x.txt'), 'x');
    writeFileSync(path.join(ahead.path, 'y.txt'), 'y');
    await commitWorktree({ path: ahead.path, message: 'y' });
    const list = (await listWorktrees({ repo })).sort((x, y) => x.branch.localeCompare(y.branch));
    expect(list.map((w) => [w.branch, w.state, w.ahead])).toEqual([
      [ahead.branch, 'clean', 1],
      [clean.branch, 'merged', 0],
      [dirty.branch, 'dirty', 0],
    ]);
    expect(list[2].files).toEqual(['x.txt']);
  });
});
