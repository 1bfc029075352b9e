/**
 * A checkout's lease (./lease, in `cadre/checkouts/`), held by each operation of cadre's that writes
 * a checkout's index or refs: a commit, a reset, making and removing a worktree. (Merges hold their
 * branch's, ./merge-lease; status reads take no lock at all, see ./hardened.) What one of them killed
 * with its worker left in the checkout is repaired by the next one there, a retry usually: the
 * locks its git left (./stale-locks), then what the operation itself needs, by the caller (a
 * commit already made reported, a worktree half made or half removed cleared away).
 */
import type { Git } from './git';
import { type Held, type Lease, type LeaseKind, absentOr, lastRecord, leaseFile, takeLease, underLease } from './lease';
import { gitDirOf, removeStaleLocks } from './stale-locks';

export interface CheckoutWork {
  op: 'commit' | 'reset' | 'create' | 'remove';
  checkout: string;
  /** The branch the operation writes. */
  branch?: string;
  /** A commit: the tool call making it (the same for each of its retries), the commit it goes on, its message. */
  call?: string;
  before?: string;
  message?: string;
  /** `git worktree add` under way (create); the removal decided and under way (remove), and the branch's base. */
  adding?: boolean;
  removing?: boolean;
  base?: string;
}

export type CheckoutRecord = Held<CheckoutWork>;

export interface CheckoutLease extends Pick<Lease<CheckoutWork>, 'leftovers' | 'note'> {
  /** The record the last commit in this checkout left when it ended. */
  last(): Promise<CheckoutRecord | undefined>;
}

export interface Checkout {
  /** The checkout (the top of its working tree, symlinks resolved), and its repository's common git directory. */
  checkout: string;
  commonDir: string;
  /** A git client of the repository: where its checkouts are listed. */
  git: Git;
}

const OPS = new Set(['commit', 'reset', 'create', 'remove']);

const CHECKOUTS: LeaseKind<CheckoutWork> = {
  folder: 'checkouts',
  valid: (r) =>
    OPS.has(r.op as string) && typeof r.checkout === 'string' && absentOr(r, 'string', 'branch', 'call', 'before', 'message', 'base') && absentOr(r, 'boolean', 'adding', 'removing'),
  busy: (held, checkout) => `${checkout}: cadre's ${held.op} is under way there (process ${held.owner.pid} on ${held.owner.host})`,
};

export function checkoutLeaseFile(commonDir: string, checkout: string): string {
  return leaseFile(commonDir, CHECKOUTS.folder, checkout);
}

/**
 * Runs `body` holding the lease of `at.checkout`, after repairing what dead holders left there: its
 * locks, then `repair` (the caller's part). With `keep`, the record stays as the checkout's last.
 */
export async function inCheckout<R>(
  at: Checkout,
  work: Omit<CheckoutWork, 'checkout'>,
  body: (lease: CheckoutLease) => Promise<R>,
  options: { repair?: (left: CheckoutRecord) => Promise<unknown>; keep?: boolean } = {},
): Promise<R> {
  const file = checkoutLeaseFile(at.commonDir, at.checkout);
  const lease = await takeLease(file, CHECKOUTS, at.checkout, { ...work, checkout: at.checkout });
  const repair = async (left: CheckoutRecord) => {
    // The key is the checkout's: a record naming another was not written by cadre.
    if (left.checkout !== at.checkout) return;
    await removeStaleLocks({
      checkout: at.checkout,
      gitDir: await gitDirOf(at.checkout, at.commonDir),
      commonDir: at.commonDir,
      branches: [...new Set([left.branch, work.branch].filter((b): b is string => b !== undefined))],
      checkouts: async () => (await at.git.raw(['worktree', 'list', '--porcelain'])).split('\n').flatMap((l) => (l.startsWith('worktree ') ? [l.slice(9)] : [])),
    });
    await options.repair?.(left);
  };
  const view: CheckoutLease = { leftovers: lease.leftovers, note: (fields) => lease.note(fields), last: () => lastRecord(file, CHECKOUTS) };
  return underLease(lease, repair, () => body(view), options.keep);
}
