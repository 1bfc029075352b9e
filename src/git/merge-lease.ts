/**
 * A merge's lease on the branch it merges into (./lease, in `cadre/merges/`): which process merges
 * what, in which checkout, from which commit. One merge into a branch at a time; what a merge
 * killed with its worker left is repaired by the next (./merge-leftovers).
 */
import { type Held, type Lease, type LeaseKind, absentOr, leaseFile as leaseFileOf, takeLease } from './lease';

export interface MergeWork {
  branch: string;
  into: string;
  /** The checkout the merge runs in, once chosen, and whether cadre made it for the merge. */
  checkout?: string;
  temporary?: boolean;
  /** The target's commit when the merge began, in a checkout found clean, and the commit being merged. */
  before?: string;
  tip?: string;
}

export type LeaseRecord = Held<MergeWork>;
export type MergeLease = Lease<MergeWork>;

const MERGES: LeaseKind<MergeWork> = {
  folder: 'merges',
  valid: (r) =>
    typeof r.branch === 'string' && typeof r.into === 'string' && absentOr(r, 'string', 'checkout', 'before', 'tip') && absentOr(r, 'boolean', 'temporary'),
  busy: (held, into) => `merging into ${into}: another merge into ${into} is under way (${held.branch}, by process ${held.owner.pid} on ${held.owner.host})`,
};

/** The lease file of merges into `into`, in the repository's common git directory. */
export function leaseFile(commonDir: string, into: string): string {
  return leaseFileOf(commonDir, MERGES.folder, into);
}

export function takeMergeLease(commonDir: string, branch: string, into: string, waitMs?: number): Promise<MergeLease> {
  return takeLease(leaseFile(commonDir, into), MERGES, into, { branch, into }, waitMs);
}
