/**
 * What a step does to its worktree's history: commit it, or reset it to where it started. Each
 * runs under the checkout's lease (./checkout-lease), so a retry of one killed with its worker
 * first clears the locks its git left; a commit the killed attempt made is reported by the retry
 * as made, never made twice.
 */
import { ErrorTypes, permanent } from '../errors/application-failures';
import { type Git, commitOf, run } from './git';
import { type CheckoutLease, inCheckout } from './checkout-lease';
import { baseOf, cadreHead, locateWorktree } from './worktrees';

export interface CommitRequest {
  path: string;
  message: string;
  all?: boolean;
  /** Names the tool call, the same for each of its retries: a retry finds the commit an earlier attempt made. */
  call?: string;
}

export async function commitWorktree(request: CommitRequest): Promise<{ committed: boolean; commit?: string }> {
  if (typeof request.message !== 'string' || request.message.trim() === '') throw permanent(ErrorTypes.BadToolInput, 'message: a commit needs a message');
  const { git, top, commonDir } = await locateWorktree(request.path);
  return inCheckout(
    { checkout: top, commonDir, git },
    { op: 'commit' },
    async (lease) => {
      const { branch, commit: before } = await cadreHead(git, request.path);
      const made = request.call === undefined ? undefined : await madeBefore(git, lease, request.call);
      if (made) return { committed: true, commit: made };
      if (request.all !== false) await run(git, ['add', '--all'], 'staging changes');
      const staged = (await run(git, ['diff', '--cached', '--name-only'], 'reading staged changes')).trim();
      if (!staged) return { committed: false };
      await lease.note({ branch, before, message: request.message, ...(request.call !== undefined && { call: request.call }) });
      await run(git, ['commit', '--quiet', '--no-verify', '-m', request.message], 'committing');
      return { committed: true, commit: (await run(git, ['rev-parse', 'HEAD'], 'reading the commit')).trim() };
    },
    // Kept as the checkout's last record: a retry after the lease was released still finds the commit.
    { keep: true },
  );
}

/**
 * The commit an earlier attempt of `call` made, as its record (a dead holder's, or the checkout's
 * last) says: the commit on `before`, on the branch's first-parent line, with its message.
 */
async function madeBefore(git: Git, lease: CheckoutLease, call: string): Promise<string | undefined> {
  const prior = [...lease.leftovers].reverse().find((l) => l.call === call) ?? (await lease.last());
  // `before` goes on git's command line: a commit's name, nothing else (the record is a file anyone could write).
  if (prior?.call !== call || !/^[0-9a-f]{40,64}$/.test(prior.before ?? '') || prior.message === undefined) return undefined;
  const log = await git.raw(['log', '--first-parent', '--reverse', '--format=%H %P%x00%B%x00', `${prior.before}..HEAD`]).catch(() => '');
  const fields = log.split('\0');
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const [commit, parent] = fields[i].trim().split(' ');
    if (parent === prior.before) return stripspace(fields[i + 1]) === stripspace(prior.message) ? commit : undefined;
  }
  return undefined;
}

/** A message as `git commit -m` keeps it: trailing whitespace and blank lines at either end gone, runs of blank lines made one. */
export function stripspace(message: string): string {
  const lines = message.split('\n').map((line) => line.replace(/[ \t\n\v\f\r]+$/, ''));
  const kept = lines.filter((line, i) => line !== '' || (i > 0 && lines[i - 1] !== ''));
  while (kept[0] === '') kept.shift();
  while (kept[kept.length - 1] === '') kept.pop();
  return kept.join('\n');
}

/**
 * Back to where the worktree started, or to `base` when given (a ref or commit): its commits,
 * changes and untracked files dropped (ignored files stay). Doing it again does nothing more.
 */
export async function resetWorktree(request: { path: string; base?: string }): Promise<{ commit: string }> {
  const { git, top, commonDir } = await locateWorktree(request.path);
  return inCheckout({ checkout: top, commonDir, git }, { op: 'reset' }, async (lease) => {
    const { branch } = await cadreHead(git, request.path);
    const target = request.base === undefined ? (await baseOf(top)).baseCommit : await commitOf(git, request.base);
    if (!target) throw permanent(ErrorTypes.BadToolInput, `base: "${request.base}" names no commit in ${top}`);
    await lease.note({ branch });
    await run(git, ['reset', '--quiet', '--hard', target], 'resetting to the base');
    await run(git, ['clean', '-fd', '--quiet'], 'removing untracked files');
    return { commit: target };
  });
}
