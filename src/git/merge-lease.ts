/**
 * A merge's lease on the branch it merges into, kept in the repository's git directory
 * (`cadre/merges/<hash of the branch>.json`): which process merges what, in which checkout, from
 * which commit. One merge into a branch at a time; a merge that finds the lease held waits a
 * little, then gives up as GitBusy (retryable).
 *
 * git runs tied to the worker (./hardened): when the process holding a lease is dead, so is every
 * git it started, and the lease says where to look for what its merge left (./merge-leftovers).
 * A lease held on another host is never taken for dead: cadre's checkouts are on the worker's own
 * disk, and a host cannot see another's processes.
 */
import { createHash } from 'node:crypto';
import { link, mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { ErrorTypes, transient } from '../errors/application-failures';
import { type ProcessIdentity, isProcessAlive, thisProcess } from '../process-alive';

export interface LeaseRecord {
  owner: ProcessIdentity;
  branch: string;
  into: string;
  /** The checkout the merge runs in, once chosen, and whether cadre made it for the merge. */
  checkout?: string;
  temporary?: boolean;
  /** The target's commit when the merge began, in a checkout found clean, and the commit being merged. */
  before?: string;
  tip?: string;
}

export interface MergeLease {
  /** What a dead holder's lease said, when this lease was taken over from it. */
  readonly leftover?: LeaseRecord;
  /** Records where the merge goes, before it goes there. */
  note(fields: Pick<LeaseRecord, 'checkout' | 'temporary' | 'before' | 'tip'>): Promise<void>;
  release(): Promise<void>;
}

/** How long a merge waits for another merge into the same branch before giving up (retryable). */
export const LEASE_WAIT_MS = 10_000;

/** The lease file of merges into `into`, in the repository's common git directory. */
export function leaseFile(commonDir: string, into: string): string {
  return path.join(commonDir, 'cadre', 'merges', `${createHash('sha256').update(into).digest('hex').slice(0, 32)}.json`);
}

export async function takeMergeLease(commonDir: string, branch: string, into: string, waitMs = LEASE_WAIT_MS): Promise<MergeLease> {
  const file = leaseFile(commonDir, into);
  await mkdir(path.dirname(file), { recursive: true });
  const mine: LeaseRecord = { owner: thisProcess(), branch, into };
  const deadline = Date.now() + waitMs;
  let leftover: LeaseRecord | undefined;
  for (;;) {
    if (await createExclusive(file, mine)) return lease(file, mine, leftover);
    const held = await readRecord(file);
    if (held === 'missing') continue;
    const alive = held !== 'unreadable' && isProcessAlive(held.owner);
    if (!alive) {
      // Its holder is dead, and with it every git it ran: take over, and say what it left. (A lease
      // nobody can read was never cadre's: leases are written whole.)
      if (held !== 'unreadable') leftover = held;
      await unlink(file).catch(() => undefined);
    } else if (Date.now() >= deadline) {
      throw transient(ErrorTypes.GitBusy, `merging ${branch} into ${into}: another merge into ${into} is under way (${held.branch}, by process ${held.owner.pid} on ${held.owner.host})`);
    }
    // Bounded even when a lease can be neither read nor removed.
    if (Date.now() >= deadline + waitMs) throw transient(ErrorTypes.GitBusy, `merging ${branch} into ${into}: cannot take over the lease ${file}`);
    await delay(alive ? 100 : 10);
  }
}

function lease(file: string, record: LeaseRecord, leftover: LeaseRecord | undefined): MergeLease {
  let current = record;
  return {
    ...(leftover && { leftover }),
    async note(fields) {
      current = { ...current, ...fields };
      const temporary = `${file}.${process.pid}.tmp`;
      await writeFile(temporary, JSON.stringify(current));
      await rename(temporary, file);
    },
    async release() {
      await unlink(file).catch(() => undefined);
    },
  };
}

/** Creates `file` holding `record`, whole or not at all: false when it exists. */
async function createExclusive(file: string, record: LeaseRecord): Promise<boolean> {
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`;
  await writeFile(temporary, JSON.stringify(record));
  try {
    await link(temporary, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    await unlink(temporary).catch(() => undefined);
  }
}

/** The lease in `file`, checked field by field (the file is on disk: anything may have written it). */
async function readRecord(file: string): Promise<LeaseRecord | 'missing' | 'unreadable'> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : 'unreadable';
  }
  try {
    const r = JSON.parse(text) as Partial<LeaseRecord>;
    const o = r.owner as Partial<ProcessIdentity> | undefined;
    const strings = [o?.host, o?.boot, o?.start, r.branch, r.into].every((v) => typeof v === 'string');
    const optional = (v: unknown, type: string) => v === undefined || typeof v === type;
    if (!strings || !Number.isInteger(o?.pid) || !optional(r.checkout, 'string') || !optional(r.temporary, 'boolean') || !optional(r.before, 'string') || !optional(r.tip, 'string')) return 'unreadable';
    return r as LeaseRecord;
  } catch {
    return 'unreadable';
  }
}
