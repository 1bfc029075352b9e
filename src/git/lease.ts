/**
 * Leases on what cadre's git writes, kept in the repository's git directory
 * (`cadre/<folder>/<hash of the key>.json`): which process holds it, and what it is doing there.
 * One holder per key at a time; a taker that finds a live holder waits a little, then gives up as
 * GitBusy (retryable). Merges hold one on their target branch (./merge-lease), and every other
 * operation that writes a checkout's index or refs one on that checkout (./checkout-lease).
 *
 * git runs tied to the worker (./hardened): when the process holding a lease is dead, so is every
 * git it started, and its record says what was under way, for the next holder to repair. A lease
 * held on another host is never taken for dead: cadre's checkouts are on the worker's own disk,
 * and a host cannot see another's processes. The record of a dead holder is carried in the next
 * one's until it is repaired, so a taker killed in its turn hands it on.
 *
 * The files are small and local: they are read and written synchronously, with no round trip through
 * the thread pool for each (its cost: bench/git-leases.ts).
 */
import { createHash } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { ErrorTypes, transient } from '../errors/application-failures';
import { type ProcessIdentity, isProcessAlive, thisProcess } from '../process-alive';

/** A lease's record: the holder, what it does (the kind's own fields), and what dead holders before it left unrepaired. */
export type Held<T> = T & { owner: ProcessIdentity; inherited?: Held<T>[] };

/** For a kind's `valid`: each of `keys` of a record read from disk is absent or of `type`. */
export const absentOr = (r: Record<string, unknown>, type: 'string' | 'boolean', ...keys: string[]): boolean => keys.every((k) => r[k] === undefined || typeof r[k] === type);

export interface LeaseKind<T> {
  /** The folder of these leases under `<common dir>/cadre/`. */
  folder: string;
  /** Whether the kind's fields of a record read from disk have the right types (anything may have written it). */
  valid(fields: Record<string, unknown>): boolean;
  /** What a live holder is doing, for the GitBusy message. */
  busy(held: Held<T>, key: string): string;
}

export interface Lease<T> {
  /** What dead holders left, oldest first: this holder repairs it before its own work. */
  readonly leftovers: readonly Held<T>[];
  /** Records more of what this holder does, before it does it. */
  note(fields: Partial<T>): Promise<void>;
  /** The leftovers are repaired: this lease stops carrying them. */
  repaired(): Promise<void>;
  /** The leftovers could not be repaired: they go back on disk, for the next taker, and this lease ends. */
  handBack(): Promise<void>;
  /** Ends the lease; with `keep`, its record stays behind as the key's last one (see lastRecord). */
  release(keep?: boolean): Promise<void>;
}

/** How long a taker waits for a live holder before giving up (retryable). */
export const LEASE_WAIT_MS = 10_000;
/** Dead holders' records carried at most: each taker killed before repairing adds one. */
const MAX_INHERITED = 4;

export function leaseFile(commonDir: string, folder: string, key: string): string {
  return path.join(commonDir, 'cadre', folder, `${createHash('sha256').update(key).digest('hex').slice(0, 32)}.json`);
}

const lastFile = (file: string) => file.replace(/\.json$/, '.last.json');

export async function takeLease<T extends object>(file: string, kind: LeaseKind<T>, key: string, work: T, waitMs = LEASE_WAIT_MS): Promise<Lease<T>> {
  mkdirSync(path.dirname(file), { recursive: true });
  const deadline = Date.now() + waitMs;
  let inherited: Held<T>[] = [];
  for (;;) {
    const mine: Held<T> = { ...work, owner: thisProcess(), ...(inherited.length > 0 && { inherited }) };
    if (createExclusive(file, mine)) return lease(file, mine);
    const held = readRecord(file, kind);
    if (held === 'missing') continue;
    const alive = held.record !== undefined && isProcessAlive(held.record.owner);
    if (!alive) {
      // Its holder is dead, and with it every git it ran: take over, carrying what it left. (A lease
      // nobody can read was never cadre's: leases are written whole.)
      if (moveAside(file, held.text)) inherited = held.record ? chain(held.record) : inherited;
    } else if (Date.now() >= deadline) {
      throw transient(ErrorTypes.GitBusy, kind.busy(held.record as Held<T>, key));
    }
    // Bounded even when a lease can be neither read nor removed.
    if (Date.now() >= deadline + waitMs) throw transient(ErrorTypes.GitBusy, `${key}: cannot take over the lease ${file}`);
    await delay(alive ? 100 : 10);
  }
}

/** The record a lease released with `keep` left behind, if it is readable. */
export async function lastRecord<T>(file: string, kind: LeaseKind<T>): Promise<Held<T> | undefined> {
  const read = readRecord(lastFile(file), kind);
  return read === 'missing' ? undefined : read.record;
}

export async function forgetLastRecord(file: string): Promise<void> {
  quietly(() => unlinkSync(lastFile(file)));
}

/**
 * Holds `lease` while `work` runs: first `repair` goes over what dead holders left, oldest first;
 * if it fails, that goes back for the next taker. Released however `work` ends.
 */
export async function underLease<T, R>(lease: Lease<T>, repair: (left: Held<T>) => Promise<unknown>, work: () => Promise<R>, keep = false): Promise<R> {
  try {
    if (lease.leftovers.length > 0) {
      try {
        for (const left of lease.leftovers) await repair(left);
      } catch (err) {
        await lease.handBack();
        throw err;
      }
      await lease.repaired();
    }
    return await work();
  } finally {
    await lease.release(keep);
  }
}

/** A dead holder's record and those it carried, oldest first, without nesting. */
function chain<T>(dead: Held<T>): Held<T>[] {
  const { inherited = [], ...own } = dead;
  return [...inherited, own as Held<T>].slice(-MAX_INHERITED);
}

function lease<T>(file: string, record: Held<T>): Lease<T> {
  let current = record;
  let ended = false;
  const write = (content: object) => {
    const temporary = `${file}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify(content));
    renameSync(temporary, file);
  };
  return {
    leftovers: record.inherited ?? [],
    async note(fields) {
      current = { ...current, ...fields };
      write(current);
    },
    async repaired() {
      current = { ...current };
      delete current.inherited;
      write(current);
    },
    async handBack() {
      const left = record.inherited ?? [];
      const last = left[left.length - 1];
      ended = true;
      if (last) write({ ...last, ...(left.length > 1 && { inherited: left.slice(0, -1) }) });
      else quietly(() => unlinkSync(file));
    },
    async release(keep = false) {
      if (ended) return;
      ended = true;
      quietly(() => (keep ? renameSync(file, lastFile(file)) : unlinkSync(file)));
    },
  };
}

/** Runs a removal or rename whose file may be gone already. */
function quietly(change: () => void): void {
  try {
    change();
  } catch {
    // gone already
  }
}

/** Creates `file` holding `record`, whole or not at all: false when it exists. */
function createExclusive(file: string, record: object): boolean {
  const temporary = `${file}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(temporary, JSON.stringify(record));
  try {
    linkSync(temporary, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    quietly(() => unlinkSync(temporary));
  }
}

let asides = 0;

/**
 * Takes the dead lease that read `text` out of the way: moved aside, not unlinked, so that a lease
 * another taker made there in the meantime is seen, and put back, rather than removed.
 */
function moveAside(file: string, text: string): boolean {
  const aside = `${file}.${process.pid}.${++asides}.dead`;
  try {
    renameSync(file, aside);
  } catch {
    return false;
  }
  let moved: string | undefined;
  quietly(() => (moved = readFileSync(aside, 'utf8')));
  if (moved !== text) quietly(() => linkSync(aside, file));
  quietly(() => unlinkSync(aside));
  return moved === text;
}

/** The lease in `file`, checked field by field (the file is on disk: anything may have written it). */
function readRecord<T>(file: string, kind: LeaseKind<T>): { text: string; record?: Held<T> } | 'missing' {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'missing' : { text: '' };
  }
  try {
    const record = checked(JSON.parse(text), kind, true);
    return { text, ...(record && { record }) };
  } catch {
    return { text };
  }
}

function checked<T>(value: unknown, kind: LeaseKind<T>, outer: boolean): Held<T> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const r = value as Record<string, unknown>;
  const o = r.owner as Partial<ProcessIdentity> | undefined;
  if (![o?.host, o?.boot, o?.start].every((v) => typeof v === 'string') || !Number.isInteger(o?.pid) || !kind.valid(r)) return undefined;
  if (r.inherited === undefined) return r as Held<T>;
  if (!outer || !Array.isArray(r.inherited)) return undefined;
  const inherited = r.inherited.map((i) => checked(i, kind, false));
  return inherited.every((i) => i !== undefined) ? ({ ...r, inherited } as Held<T>) : undefined;
}
