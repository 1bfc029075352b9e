/** Real git repositories for tests. */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** git in `cwd`, with an identity for commits; its output trimmed. */
export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=test', '-c', 'user.email=test@localhost', ...args], { cwd, encoding: 'utf8' }).trim();
}

/** `<home>/repo` with app.txt (three lines) committed on `main`, in a temporary home of its own: worktrees go beside it. */
export function tempRepository(prefix = 'cadre-git-'): { home: string; repo: string } {
  const home = realpathSync(mkdtempSync(path.join(os.tmpdir(), prefix)));
  const repo = path.join(home, 'repo');
  mkdirSync(repo);
  git(repo, 'init', '--quiet', '--initial-branch=main');
  writeFileSync(path.join(repo, 'app.txt'), 'line 1\nline 2\nline 3\n');
  git(repo, 'add', '.');
  git(repo, 'commit', '--quiet', '-m', 'first');
  return { home, repo };
}
