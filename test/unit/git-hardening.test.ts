/**
 * The worker's own git calls never run what a repository configures: hooks, fsmonitor, filters,
 * merge and diff drivers, pagers, editors, credential helpers, proxies, signing programs, whether
 * set in the repository before cadre got it, in an included file, in a worktree's own
 * config.worktree, in a nested repository an agent committed, or in the worker's environment.
 * Every planted program touches a marker file; none may exist after cadre's operations. Each
 * scenario has a control that runs plain git on the same setup and sees the markers appear, so a
 * planted program that would never have run cannot make a test pass.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { commitWorktree, createWorktree, mergeWorktree, removeWorktree, resetWorktree, worktreeStatus } from '../../src/git';
import { inertOverrides } from '../../src/git/drivers';
import { gitAt } from '../../src/git/git';
import { hardenedGit } from '../../src/git/hardened';
import { listWorktrees } from '../../src/git/cleanup';
import { applicationFailure } from '../support/failures';
import { git, tempRepository } from '../support/git-repo';

/** Where planted programs leave their marks, and shell commands that leave one. */
function markers(home: string) {
  const dir = path.join(home, 'markers');
  mkdirSync(dir, { recursive: true });
  return {
    dir,
    /** A shell command leaving mark `name`, then running `then` (a filter must still pass content through). */
    touch: (name: string, then = '') => `touch '${path.join(dir, name)}'${then ? `; ${then}` : ''}`,
    left: () => readdirSync(dir).sort(),
  };
}
type Markers = ReturnType<typeof markers>;

/** Hooks git runs around checkout, commit, merge and ref updates; each leaves `<prefix>-<hook>`. */
const HOOKS = ['post-checkout', 'pre-commit', 'commit-msg', 'prepare-commit-msg', 'post-commit', 'pre-merge-commit', 'post-merge', 'reference-transaction', 'post-index-change', 'pre-auto-gc'];

function plantHooks(dir: string, marks: Markers, prefix: string): void {
  mkdirSync(dir, { recursive: true });
  for (const hook of HOOKS) script(path.join(dir, hook), `cat >/dev/null; ${marks.touch(`${prefix}-${hook}`)}`);
}

function script(file: string, body: string): string {
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

/** `git config` lines for a filter named `name` whose every program leaves a mark. */
function filterDriver(name: string, marks: Markers): string {
  return `[filter "${name}"]\n\tsmudge = ${marks.touch(`smudge-${name}`, 'cat')}\n\tclean = ${marks.touch(`clean-${name}`, 'cat')}\n\trequired = true\n`;
}

let touches = 0;
/**
 * Tracked files get a new modification time: git must read them again (through clean filters) to
 * know they are unchanged. Each touch is a whole second past the last, whatever git's stat precision.
 */
function touchTracked(dir: string, files: string[]): void {
  const later = new Date(Date.now() + (60 + ++touches) * 1000);
  for (const file of files) utimesSync(path.join(dir, file), later, later);
}

/**
 * A repository tampered with before cadre got it: hooks in .git/hooks, and a .git/config naming
 * programs directly, through include.path, through includeIf (gitdir, and onbranch for cadre's
 * branches), and a filter whose name holds "=" (git's `-c` could not override it).
 */
function tamperedRepository() {
  const { home, repo } = tempRepository('cadre-hardening-');
  const marks = markers(home);
  writeFileSync(
    path.join(repo, '.gitattributes'),
    ['*.txt filter=x merge=x diff=x', '*.inc filter=inc merge=inc', '*.gd filter=gitdir', '*.br filter=branch', '*.eq filter=a=b', '*.proc filter=proc'].join('\n') + '\n',
  );
  for (const file of ['a.inc', 'a.gd', 'a.br', 'a.eq', 'a.proc']) writeFileSync(path.join(repo, file), `${file}\n`);
  git(repo, 'add', '.');
  git(repo, 'commit', '--quiet', '-m', 'attributes');
  git(repo, 'branch', 'release');
  // Planted only now, so that setting the repository up ran none of it.
  plantHooks(path.join(repo, '.git', 'hooks'), marks, 'hook');
  const bin = path.join(home, 'bin');
  mkdirSync(bin);
  const fsmonitor = script(path.join(bin, 'fsmonitor'), `${marks.touch('fsmonitor')}; exit 1`);
  const gpg = script(path.join(bin, 'gpg'), `${marks.touch('gpg')}; exit 1`);
  writeFileSync(path.join(home, 'included.cfg'), `${filterDriver('inc', marks)}[merge "inc"]\n\tdriver = ${marks.touch('merge-inc')}\n`);
  writeFileSync(path.join(home, 'when-gitdir.cfg'), filterDriver('gitdir', marks));
  writeFileSync(path.join(home, 'when-branch.cfg'), filterDriver('branch', marks));
  const config = [
    `[core]\n\tfsmonitor = ${fsmonitor}\n\tpager = ${marks.touch('pager')}\n\teditor = ${marks.touch('editor')}`,
    `[sequence]\n\teditor = ${marks.touch('sequence-editor')}`,
    filterDriver('x', marks).trimEnd(),
    filterDriver('a=b', marks).trimEnd(),
    `[filter "proc"]\n\tprocess = ${marks.touch('process-proc')}`,
    `[merge "x"]\n\tdriver = ${marks.touch('merge-x')}`,
    `[diff "x"]\n\ttextconv = ${marks.touch('textconv-x', 'cat')}\n\tcommand = ${marks.touch('diff-command-x')}`,
    `[pager]\n\tstatus = ${marks.touch('pager-status')}`,
    `[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = ${gpg}`,
    `[include]\n\tpath = ../../included.cfg`,
    `[includeIf "gitdir:${repo}/.git/"]\n\tpath = ${path.join(home, 'when-gitdir.cfg')}`,
    `[includeIf "onbranch:cadre/**"]\n\tpath = ${path.join(home, 'when-branch.cfg')}`,
  ];
  writeFileSync(path.join(repo, '.git', 'config'), `${readFileSync(path.join(repo, '.git', 'config'), 'utf8')}${config.join('\n')}\n`);
  return { home, repo, marks };
}

const TRACKED = ['app.txt', 'a.inc', 'a.gd', 'a.br', 'a.eq', 'a.proc'];

describe('cadre runs nothing a repository configures', () => {
  test('control: plain git on the tampered repository runs the planted programs', () => {
    const { home, repo, marks } = tamperedRepository();
    const checkout = path.join(home, 'control');
    // The planted process filter speaks no protocol, so git stops on it: left out here, tried alone below.
    const plain = (cwd: string, ...args: string[]) => git(cwd, '-c', 'filter.proc.process=', ...args);
    plain(repo, 'worktree', 'add', '--quiet', '-b', 'cadre/control/t', checkout, 'main');
    touchTracked(checkout, TRACKED);
    plain(checkout, 'status', '--porcelain');
    writeFileSync(path.join(checkout, 'app.txt'), 'changed\n');
    execFileSync('git', ['-c', 'filter.proc.process=', 'diff'], { cwd: checkout });
    touchTracked(checkout, ['a.proc']);
    // Git stops ("the remote end hung up") or goes on without the filter ("packet write failed"),
    // depending on whether the planted program exits before git's first write: the mark is the test.
    spawnSync('git', ['status', '--porcelain'], { cwd: checkout, stdio: 'ignore' });
    expect(marks.left()).toEqual(
      expect.arrayContaining([
        'clean-a=b', 'clean-branch', 'clean-gitdir', 'clean-inc', 'clean-x',
        'diff-command-x', 'fsmonitor', 'hook-post-checkout', 'hook-reference-transaction', 'process-proc',
        'smudge-a=b', 'smudge-branch', 'smudge-gitdir', 'smudge-inc', 'smudge-x',
      ]),
    );
  });

  test('tampered before cadre got it: create, status, commit, merge (in place and in a temporary checkout), reset, remove', async () => {
    const { repo, marks } = tamperedRepository();
    const nothingRan = (step: string) => expect({ step, ran: marks.left() }).toEqual({ step, ran: [] });

    const w = await createWorktree({ repo, plan: 'p', task: 't' });
    nothingRan('createWorktree');
    expect(readFileSync(path.join(w.path, 'a.eq'), 'utf8')).toBe('a.eq\n');
    writeFileSync(path.join(w.path, 'app.txt'), 'line 1\nline 2\nline 3\nline 4\n');
    writeFileSync(path.join(w.path, 'new.inc'), 'new\n');
    touchTracked(w.path, TRACKED.slice(1));
    expect(await worktreeStatus({ path: w.path })).toMatchObject({ clean: false, changed: ['app.txt'], untracked: ['new.inc'] });
    nothingRan('worktreeStatus');
    const done = await commitWorktree({ path: w.path, message: 'work' });
    expect(done.committed).toBe(true);
    // Signing was asked for (commit.gpgSign) but would need the planted program: the commit is unsigned.
    expect(git(repo, 'cat-file', '-p', done.commit as string)).not.toContain('gpgsig');
    nothingRan('commitWorktree');
    expect(await mergeWorktree({ repo, branch: w.branch })).toMatchObject({ into: 'main', upToDate: false });
    expect(readFileSync(path.join(repo, 'app.txt'), 'utf8')).toBe('line 1\nline 2\nline 3\nline 4\n');
    nothingRan('mergeWorktree into the checked-out main');

    // release is checked out nowhere: the merge goes through a temporary checkout.
    const r = await createWorktree({ repo, plan: 'p', task: 'r', base: 'release' });
    writeFileSync(path.join(r.path, 'a.br'), 'release work\n');
    await commitWorktree({ path: r.path, message: 'release work' });
    const merged = await mergeWorktree({ repo, branch: r.branch });
    expect(merged).toMatchObject({ into: 'release', upToDate: false });
    expect(git(repo, 'show', 'release:a.br')).toBe('release work');
    nothingRan('mergeWorktree through a temporary checkout');

    writeFileSync(path.join(r.path, 'stray.inc'), 'stray\n');
    writeFileSync(path.join(r.path, 'a.gd'), 'changed\n');
    expect(await resetWorktree({ path: r.path })).toEqual({ commit: r.baseCommit });
    expect(readFileSync(path.join(r.path, 'a.gd'), 'utf8')).toBe('a.gd\n');
    nothingRan('resetWorktree');

    expect(await listWorktrees({ repo })).toHaveLength(2);
    touchTracked(w.path, TRACKED);
    expect(await removeWorktree({ repo, path: w.path })).toMatchObject({ removed: true });
    expect(await removeWorktree({ repo, path: r.path })).toMatchObject({ removed: true });
    expect(existsSync(w.path)).toBe(false);
    nothingRan('listWorktrees and removeWorktree');
  });

  test('a merge that needs the repository\'s merge driver is refused, names why, and changes nothing', async () => {
    const { repo, marks } = tamperedRepository();
    const [one, two] = [await createWorktree({ repo, plan: 'p', task: 'one' }), await createWorktree({ repo, plan: 'p', task: 'two' })];
    writeFileSync(path.join(one.path, 'app.txt'), 'line 1 (one)\nline 2\nline 3\n');
    writeFileSync(path.join(two.path, 'app.txt'), 'line 1\nline 2\nline 3 (two)\n');
    await commitWorktree({ path: one.path, message: 'one' });
    await commitWorktree({ path: two.path, message: 'two' });
    await mergeWorktree({ repo, branch: one.branch });
    const before = git(repo, 'rev-parse', 'main');
    // Both sides changed app.txt: only its merge driver (merge=x) could merge it, and cadre does not run it.
    const refused = await applicationFailure(mergeWorktree({ repo, branch: two.branch }));
    expect(refused).toMatchObject({ type: 'GitFailed', nonRetryable: true });
    expect(refused.message).toContain('merge driver');
    expect(marks.left()).toEqual([]);
    expect(git(repo, 'rev-parse', 'main')).toBe(before);
    expect(await worktreeStatus({ path: two.path })).toMatchObject({ clean: true, ahead: 1 });
    expect(readFileSync(path.join(repo, 'app.txt'), 'utf8')).toBe('line 1 (one)\nline 2\nline 3\n');
    expect(existsSync(path.join(repo, '.git', 'MERGE_HEAD'))).toBe(false);
  });

  test('tampered inside the worktree\'s own git directory (config.worktree, extensions.worktreeConfig)', async () => {
    const { home, repo } = tempRepository('cadre-hardening-');
    const marks = markers(home);
    const w = await createWorktree({ repo, plan: 'p', task: 't' });
    git(repo, 'config', 'extensions.worktreeConfig', 'true');
    const gitDir = git(w.path, 'rev-parse', '--absolute-git-dir');
    expect(gitDir).toBe(path.join(repo, '.git', 'worktrees', 't'));
    plantHooks(path.join(home, 'hooks'), marks, 'hookspath');
    const fsmonitor = script(path.join(home, 'fsmonitor'), `${marks.touch('fsmonitor')}; exit 1`);
    writeFileSync(path.join(home, 'wt-included.cfg'), filterDriver('wtinc', marks));
    writeFileSync(path.join(home, 'wt-branch.cfg'), filterDriver('wtbranch', marks));
    writeFileSync(
      path.join(gitDir, 'config.worktree'),
      [
        `[core]\n\tfsmonitor = ${fsmonitor}\n\thooksPath = ${path.join(home, 'hooks')}`,
        filterDriver('wt', marks).trimEnd(),
        `[merge "wt"]\n\tdriver = ${marks.touch('merge-wt')}`,
        `[include]\n\tpath = ${path.join(home, 'wt-included.cfg')}`,
        `[includeIf "onbranch:cadre/**"]\n\tpath = ${path.join(home, 'wt-branch.cfg')}`,
      ].join('\n') + '\n',
    );
    expect(git(w.path, 'config', '--worktree', 'core.hooksPath')).toBe(path.join(home, 'hooks'));
    writeFileSync(path.join(w.path, '.gitattributes'), '*.txt filter=wt merge=wt\n*.inc filter=wtinc\n*.br filter=wtbranch\n');
    writeFileSync(path.join(w.path, 'a.inc'), 'inc\n');
    writeFileSync(path.join(w.path, 'a.br'), 'br\n');

    const nothingRan = (step: string) => expect({ step, ran: marks.left() }).toEqual({ step, ran: [] });
    expect((await commitWorktree({ path: w.path, message: 'attributes' })).committed).toBe(true);
    nothingRan('commitWorktree');
    touchTracked(w.path, ['app.txt', 'a.inc', 'a.br']);
    expect(await worktreeStatus({ path: w.path })).toMatchObject({ clean: true, ahead: 1 });
    nothingRan('worktreeStatus');
    writeFileSync(path.join(w.path, 'stray.txt'), 'x');
    await resetWorktree({ path: w.path, base: 'HEAD' });
    nothingRan('resetWorktree');
    expect(await mergeWorktree({ repo, branch: w.branch })).toMatchObject({ into: 'main' });
    nothingRan('mergeWorktree');
    touchTracked(w.path, ['app.txt', 'a.inc', 'a.br']);
    // What removeWorktree runs once its own status found the worktree clean: from the repository,
    // `worktree remove` runs `git status` inside the worktree, which reads config.worktree.
    await (await gitAt(repo)).raw(['worktree', 'remove', w.path]);
    expect(existsSync(w.path)).toBe(false);
    nothingRan('worktree remove');
    expect(await removeWorktree({ repo, path: w.path })).toMatchObject({ removed: false, reason: 'already gone' });

    // Control: the same planting in a second worktree, with plain git.
    const c = await createWorktree({ repo, plan: 'p', task: 'c' });
    const controlDir = git(c.path, 'rev-parse', '--absolute-git-dir');
    writeFileSync(path.join(controlDir, 'config.worktree'), readFileSync(path.join(home, 'wt-branch.cfg'), 'utf8') + `[core]\n\thooksPath = ${path.join(home, 'hooks')}\n\tfsmonitor = ${fsmonitor}\n`);
    touchTracked(c.path, ['app.txt', 'a.br']);
    git(c.path, 'status', '--porcelain');
    git(c.path, 'commit', '--quiet', '--allow-empty', '-m', 'control');
    expect(marks.left()).toEqual(expect.arrayContaining(['clean-wtbranch', 'fsmonitor', 'hookspath-post-commit', 'hookspath-reference-transaction']));
  });

  test('a nested repository an agent committed in its worktree: git runs `status` inside it, with its own configuration', async () => {
    const { home, repo } = tempRepository('cadre-hardening-');
    const marks = markers(home);
    const w = await createWorktree({ repo, plan: 'p', task: 't' });
    const nested = path.join(w.path, 'nested');
    mkdirSync(nested);
    git(nested, 'init', '--quiet', '--initial-branch=main');
    writeFileSync(path.join(nested, '.gitattributes'), '* filter=evil\n');
    writeFileSync(path.join(nested, 'x'), 'x\n');
    git(nested, 'add', '.');
    git(nested, 'commit', '--quiet', '-m', 'nested');
    writeFileSync(path.join(nested, '.git', 'config'), `${readFileSync(path.join(nested, '.git', 'config'), 'utf8')}${filterDriver('evil', marks)}`);

    expect((await commitWorktree({ path: w.path, message: 'adds nested' })).committed).toBe(true);
    expect(git(w.path, 'ls-files', '--stage', 'nested')).toMatch(/^160000 /);
    touchTracked(nested, ['x']);
    await worktreeStatus({ path: w.path });
    expect(await commitWorktree({ path: w.path, message: 'again' })).toEqual({ committed: false });
    expect(marks.left()).toEqual([]);

    touchTracked(nested, ['x']);
    git(w.path, 'status', '--porcelain');
    expect(marks.left()).toEqual(['clean-evil']);
  });

  test('the worker\'s environment cannot bring programs back, and transports run none either', async () => {
    const { home, repo } = tempRepository('cadre-hardening-');
    const marks = markers(home);
    // `planted <name>` leaves mark planted-<name>.
    const planted = script(path.join(home, 'planted'), `touch "${marks.dir}/planted-$1"; exit 1`);
    const at = (name: string) => `${planted} ${name}`;
    for (const [key, value] of [
      ['core.sshCommand', at('ssh-config')],
      ['core.gitProxy', script(path.join(home, 'proxy'), `${marks.touch('proxy-config')}; exit 1`)],
      ['core.askPass', at('askpass-config')],
      ['credential.helper', `!${marks.touch('credential-config')}`],
      ['protocol.ext.allow', 'always'],
      ['core.pager', at('pager-config')],
      ['core.editor', at('editor-config')],
      ['diff.external', at('external-diff-config')],
    ]) {
      git(repo, 'config', key, value);
    }
    const worker: Record<string, string> = {
      GIT_SSH_COMMAND: at('ssh-env'),
      GIT_SSH: planted,
      GIT_PROXY_COMMAND: script(path.join(home, 'proxy-env'), `${marks.touch('proxy-env')}; exit 1`),
      GIT_ASKPASS: at('askpass-env'),
      SSH_ASKPASS: at('ssh-askpass-env'),
      GIT_PAGER: at('pager-env'),
      PAGER: at('pager-env2'),
      GIT_EDITOR: at('editor-env'),
      EDITOR: at('editor-env2'),
      VISUAL: at('editor-env3'),
      GIT_EXTERNAL_DIFF: at('external-diff-env'),
      GIT_CONFIG_PARAMETERS: `'credential.helper'='!${marks.touch('credential-env')}'`,
    };
    const saved = Object.fromEntries(Object.keys(worker).map((k) => [k, process.env[k]]));
    Object.assign(process.env, worker);
    // Asks for credentials: git would try its helpers, then askpass, then the terminal.
    const server = http.createServer((_req, res) => res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="x"' }).end());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const g = await gitAt(repo);
      expect((await g.raw(['var', 'GIT_PAGER'])).trim()).toBe('cat');
      expect((await g.raw(['var', 'GIT_EDITOR'])).trim()).toBe(':');
      // diff.external has no "none": a content diff must say --no-ext-diff (cadre's own diffs list names only).
      writeFileSync(path.join(repo, 'app.txt'), 'changed\n');
      await expect(g.raw(['diff'])).rejects.toThrow(/external diff died/);
      expect(await g.raw(['diff', '--no-ext-diff'])).toContain('+changed');
      // No system configuration: this machine's /etc/gitconfig, if any, is not read.
      expect(await g.raw(['config', '--list', '--show-scope'])).not.toMatch(/^system\t/m);
      const port = (server.address() as AddressInfo).port;
      for (const url of ['ssh://127.0.0.1/x', 'git://127.0.0.1:1/x', `ext::${planted} ext`, `http://127.0.0.1:${port}/x`]) {
        await expect(g.raw(['ls-remote', url])).rejects.toThrow();
      }
    } finally {
      server.closeAllConnections();
      server.close();
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
    expect(marks.left()).toEqual([]);
    // Control: `-c core.gitProxy=none` would not have been enough: the first proxy git reads wins.
    expect(() => execFileSync('git', ['-c', 'core.gitProxy=none', 'ls-remote', 'git://127.0.0.1:1/x'], { cwd: repo, stdio: 'ignore' })).toThrow();
    expect(marks.left()).toEqual(['proxy-config']);
  });

  test('git ignores uploadpack.packObjectsHook in a repository\'s own configuration (cadre need not set it)', async () => {
    const { home, repo } = tempRepository('cadre-hardening-');
    const marks = markers(home);
    // A commit of its own: repositories made in the same second by tempRepository are identical.
    writeFileSync(path.join(repo, 'own.txt'), home);
    git(repo, 'add', 'own.txt');
    git(repo, 'commit', '--quiet', '-m', 'own');
    const hook = script(path.join(home, 'pack-hook'), `${marks.touch('pack-objects-hook')}; exec "$@"`);
    git(repo, 'config', 'uploadpack.packObjectsHook', hook);
    const other = tempRepository('cadre-hardening-').repo;
    await (await gitAt(other)).raw(['fetch', '--quiet', '--no-tags', repo, 'main']);
    expect(marks.left()).toEqual([]);
    // Control: on upload-pack's own command line, git honours it (into a repository that lacks the objects).
    const fresh = tempRepository('cadre-hardening-').repo;
    execFileSync('git', ['fetch', '--quiet', '--no-tags', `--upload-pack=git -c uploadpack.packObjectsHook=${hook} upload-pack`, repo, 'main'], { cwd: fresh, stdio: 'ignore' });
    expect(marks.left()).toEqual(['pack-objects-hook']);
  });

  test('simple-git still refuses unsafe arguments outside what the hardening needs', async () => {
    const { repo } = tempRepository('cadre-hardening-');
    const g = hardenedGit(repo);
    for (const args of [
      ['-c', 'include.path=/tmp/elsewhere', 'status'],
      ['-c', 'alias.st=!touch /tmp/x', 'st'],
      ['fetch', '--upload-pack=touch /tmp/x', repo],
      ['-C', '/', 'status'],
      ['--exec-path=/tmp', 'status'],
    ]) {
      await expect(g.raw(args)).rejects.toThrow(/not permitted|blocked/);
    }
  });

  test('each driver found is overridden by its exact name, whatever characters the name holds', () => {
    expect(inertOverrides(['filter.a=b.clean', 'merge.x.y.driver', 'merge.x.y.name', 'diff.d.textconv', 'diff.d.xfuncname', 'pager.log', 'gpg.new.program', 'core.editor'])).toEqual([
      ['filter.a=b.clean', ''],
      ['filter.a=b.smudge', ''],
      ['filter.a=b.process', ''],
      ['filter.a=b.required', 'false'],
      ['merge.x.y.driver', ''],
      ['diff.d.textconv', ''],
      ['pager.log', 'false'],
      ['gpg.new.program', ''],
    ]);
  });
});
