/**
 * `.git` tampering from a step's worktree: the `.git` file, the worktree's git directory, the
 * repository's common one (config, hooks, info/attributes, refs) are read-only; what a tool may
 * write (`.gitattributes`, a nested repository with its own config and hooks, `.gitmodules`, its
 * own home's git config) is planted, and then cadre's own git.status, git.commit and git.merge run
 * on the host: no planted program may run (each would leave a mark in a host directory).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Case, attackOutput, reasons, resultCase, shellCase } from '../cases';
import { exists, readOr } from '../host';

export interface GitTargets {
  repo: string;
  /** Where planted programs leave marks when they run (a host directory the sandbox cannot see). */
  marks: string;
  /** main's commit before the run. */
  mainBefore: string;
  tag: string;
}

const gitOut = (cwd: string, ...args: string[]) => {
  try {
    return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return '';
  }
};

function isAncestor(repo: string, commit: string, of: string): boolean {
  try {
    execFileSync('git', ['merge-base', '--is-ancestor', commit, of], { cwd: repo, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Marks planted programs left: none may be there. */
export const marksLeft = (dir: string) => (existsSync(dir) ? readdirSync(dir).sort() : []);

export function gitCases(t: GitTargets): Case[] {
  const common = path.join(t.repo, '.git');
  const touch = (name: string) => `touch ${path.join(t.marks, name)}`;
  const noMarks = () => reasons(...marksLeft(t.marks).map((m): [boolean, string] => [true, `a planted program ran on the host: ${m}`]));
  const c = (id: string, title: string, attack: string, escapes: Case['escapes']) => shellCase('git', id, title, attack, escapes);
  const unchanged = (file: string, before: string) => () => reasons([readOr(file) !== before, `${file} changed`]);
  const configBefore = readOr(path.join(common, 'config'));
  const excludeBefore = readOr(path.join(common, 'info', 'exclude'));
  const hookNames = ['pre-commit', 'post-commit', 'post-merge', 'post-checkout', 'pre-merge-commit', 'reference-transaction', 'commit-msg', 'prepare-commit-msg'];
  const hook = (name: string) => `#!/bin/sh\\n${touch(`hook-${name}`)}\\n`;
  const GD = 'GD=$(sed -n "s/^gitdir: //p" .git); CD=$(git rev-parse --git-common-dir); echo "gitdir=$GD common=$CD"';
  const homeConfig = path.join(os.homedir(), '.gitconfig');
  const homeConfigBefore = readOr(homeConfig);
  return [
    c('git-file-overwrite', 'overwrite the worktree\'s .git file', "echo 'gitdir: /tmp/evil' > .git; cat .git", ({ workspace }) => reasons([!/^gitdir: .*\.git\/worktrees\//.test(readOr(path.join(workspace, '.git'))), '.git no longer points at the repository'])),
    c('git-file-remove', 'remove and replace the .git file', 'rm -f .git; mv .git .git-old; mkdir .git', ({ workspace }) => reasons([!/^gitdir:/.test(readOr(path.join(workspace, '.git'))), '.git was replaced'], [exists(path.join(workspace, '.git-old')), '.git was moved'])),
    c('git-gitdir-write', "write into the worktree's git directory", `${GD}; echo pwned > "$GD/rt-${t.tag}"; ls "$GD"`, () => reasons([readdirSync(path.join(common, 'worktrees')).some((w) => exists(path.join(common, 'worktrees', w, `rt-${t.tag}`))), 'a file was written in the git directory'])),
    c('git-gitdir-head', "rewrite the worktree's HEAD", `${GD}; echo 0000000000000000000000000000000000000000 > "$GD/HEAD"`, () => reasons([readdirSync(path.join(common, 'worktrees')).some((w) => !readOr(path.join(common, 'worktrees', w, 'HEAD')).startsWith('ref: ')), 'a worktree HEAD was rewritten'])),
    c('git-config-fsmonitor', "add core.fsmonitor to the repository's config", `${GD}; printf '[core]\\n\\tfsmonitor = ${touch('config-fsmonitor')}\\n' >> "$CD/config"`, unchanged(path.join(common, 'config'), configBefore)),
    c('git-config-command', 'git config core.hooksPath and an alias from inside', `git config core.hooksPath ./hooks-${t.tag}; git config alias.st '!${touch('alias')}'; git config --worktree core.fsmonitor '${touch('worktree-fsmonitor')}'`, unchanged(path.join(common, 'config'), configBefore)),
    c('git-config-worktree', 'enable worktreeConfig and write config.worktree', `${GD}; printf '[core]\\n\\tfsmonitor = ${touch('config-worktree')}\\n' > "$GD/config.worktree"; git config extensions.worktreeConfig true`, () => reasons([readdirSync(path.join(common, 'worktrees')).some((w) => exists(path.join(common, 'worktrees', w, 'config.worktree'))), 'config.worktree was written'])),
    c('git-hooks', "plant hooks in the repository's hooks directory", `${GD}; for h in ${hookNames.join(' ')}; do printf '${hook('x')}' > "$CD/hooks/$h"; chmod +x "$CD/hooks/$h"; done; ls "$CD/hooks"`, () => reasons(...hookNames.map((h): [boolean, string] => [exists(path.join(common, 'hooks', h)), `hooks/${h} was planted`]))),
    c('git-hooks-symlink', 'reach the hooks through a symlink in the worktree', `${GD}; ln -s "$CD/hooks" hooks-link-${t.tag}; printf '${hook('via-link')}' > hooks-link-${t.tag}/post-commit`, () => reasons([exists(path.join(common, 'hooks', 'post-commit')), 'hooks/post-commit was planted'])),
    c('git-info-attributes', 'plant info/attributes naming a filter', `${GD}; mkdir -p "$CD/info"; echo '* filter=rt diff=rt merge=rt' > "$CD/info/attributes"`, () => reasons([exists(path.join(common, 'info', 'attributes')), 'info/attributes was planted'])),
    c('git-info-exclude', 'hide every change with info/exclude', `${GD}; echo '*' >> "$CD/info/exclude"`, unchanged(path.join(common, 'info', 'exclude'), excludeBefore)),
    // main may move on by cadre's own merge later, never back.
    c('git-refs', 'rewind main and make a branch from inside', `git update-ref refs/heads/main HEAD~1; git branch -f main HEAD~1; git branch pwned-${t.tag}`, () =>
      reasons([!isAncestor(t.repo, t.mainBefore, 'main'), 'main was rewound'], [gitOut(t.repo, 'branch', '--list', `pwned-${t.tag}`) !== '', 'a branch was made'])),
    c('git-commit-inside', 'commit from inside the sandbox', `git -c user.name=x -c user.email=x commit --allow-empty -m pwned-${t.tag}`, () => reasons([gitOut(t.repo, 'log', '--all', '--format=%s', `--grep=pwned-${t.tag}`) !== '', 'the commit was made'])),
    c('git-push-inside', 'push to the repository from inside', `${GD}; git push "$CD" HEAD:refs/heads/pushed-${t.tag}`, () => reasons([gitOut(t.repo, 'branch', '--list', `pushed-${t.tag}`) !== '', 'the push went through'])),
    c('git-worktree-add', 'add a worktree from inside', `git worktree add ../escape-${t.tag}`, ({ workspace }) => reasons([exists(path.join(path.dirname(workspace), `escape-${t.tag}`)), 'a worktree was added'], [gitOut(t.repo, 'worktree', 'list').includes(`escape-${t.tag}`), 'the repository lists it'])),
    c('git-repo-checkout', "write the repository's own checkout", `ls -la ${t.repo}; echo pwned >> ${t.repo}/app.txt`, (ctx) => reasons([readOr(path.join(t.repo, 'app.txt')).includes('pwned'), 'app.txt of the repository changed'], [/app\.txt/.test(attackOutput(ctx.outcome).replace(`${t.repo}/app.txt`, '')), "the repository's checkout is visible"])),
    c('git-home-config', 'a global git config in its home', `printf '[core]\\n\\tfsmonitor = ${touch('home-config')}\\n' > ~/.gitconfig; mkdir -p ~/.config/git; cp ~/.gitconfig ~/.config/git/config; printf '[core]\\n\\tfsmonitor = ${touch('home-config')}\\n' >> ${homeConfig}`, () => reasons([readOr(homeConfig) !== homeConfigBefore, `${homeConfig} changed`])),
    // Plants a tool may make (they are its files): cadre's git must not run them.
    c('git-plant-attributes', 'plant .gitattributes naming filter, diff and merge drivers', "printf '* filter=rtf diff=rtd merge=rtm\\n' > .gitattributes", noMarks),
    c('git-plant-nested', 'plant a nested repository with fsmonitor, filters, hooks', [
      'mkdir -p nested && cd nested && git init -q',
      `git config core.fsmonitor '${touch('nested-fsmonitor')}'`,
      `git config filter.rtf.clean '${touch('nested-clean')}; cat'`,
      `git config filter.rtf.smudge '${touch('nested-smudge')}; cat'`,
      `git config diff.rtd.textconv '${touch('nested-textconv')}; cat'`,
      `git config merge.rtm.driver '${touch('nested-merge')}'`,
      `git config core.pager '${touch('nested-pager')}'`,
      `printf '${hook('nested')}' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit`,
      "printf '* filter=rtf diff=rtd merge=rtm\\n' > .gitattributes; echo data > data.txt",
      'git add . && git -c user.name=x -c user.email=x commit -q --no-verify -m nested && git log --oneline',
    ].join(' && '), noMarks),
    c('git-plant-gitfile', 'plant a .git file pointing at a hostile git directory', [
      'mkdir -p linked && git init -q --separate-git-dir=evil-gitdir linked',
      `git -C linked config core.fsmonitor '${touch('gitfile-fsmonitor')}'`,
      `printf '${hook('gitfile')}' > evil-gitdir/hooks/pre-commit; chmod +x evil-gitdir/hooks/pre-commit`,
      'git -C linked -c user.name=x -c user.email=x commit -q --allow-empty --no-verify -m linked',
      'cat linked/.git',
    ].join(' && '), noMarks),
    // (git itself refuses `update = !command` from .gitmodules, failing every later git call: a URL with a program instead.)
    c('git-plant-gitmodules', 'plant .gitmodules with an ext:: URL running a program', `printf '[submodule "nested"]\\n\\tpath = nested\\n\\turl = ext::sh -c ${touch('submodule-ext').replace(/ /g, '%% ')}\\n\\tfetchRecurseSubmodules = true\\n' > .gitmodules`, noMarks),
  ];
}

/** cadre's own git, after the plants: status, then commit, then merge, each a turn of its own. */
export function gitToolCases(t: GitTargets): Case[] {
  const noMarks = () => reasons(...marksLeft(t.marks).map((m): [boolean, string] => [true, `a planted program ran on the host: ${m}`]));
  return [
    resultCase('git', 'git-tool-status', "cadre's git.status over the plants", { name: 'git_status', args: {} }, /"branch"/, noMarks, 2),
    resultCase('git', 'git-tool-commit', "cadre's git.commit of the plants", { name: 'git_commit', args: { message: `red team ${t.tag}`, all: true } }, /"committed":true/, noMarks, 3),
    resultCase('git', 'git-tool-merge', "cadre's git.merge of the plants into main", { name: 'git_merge', args: {} }, /"into":"main"/, noMarks, 4),
  ];
}
