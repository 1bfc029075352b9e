/**
 * The blob store: JSON values kept outside Temporal's history, in files named by the SHA-256 of
 * their content (`<store>/<sha256>.json`), so a retried write is the same file and a read can be
 * verified. Activities put big outputs here and hand workflows a `StoredRef`; activities and
 * clients read them back. I/O; never imported by workflow code.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { JsonKind, StoredList, StoredRef } from '../plan-format/refs';

/** Where a workspace keeps its blobs unless the worker names another store. */
export const WORKSPACE_BLOB_DIR = path.join('.cadre', 'blobs');

const SHA256 = /^[0-9a-f]{64}$/;

export class BlobError extends Error {}

export class BlobStore {
  private constructor(readonly dir: string) {}

  /** The store of a workspace (`.cadre/blobs` inside it), or `configured` when the worker names one. */
  static async open(workspace: string, configured?: string): Promise<BlobStore> {
    if (configured) {
      if (!path.isAbsolute(configured)) throw new BlobError(`the blob store ${configured} must be an absolute path`);
      await mkdir(configured, { recursive: true });
      return new BlobStore(await realpath(configured));
    }
    const root = await realpath(workspace);
    // Component by component, checked before anything is made: a `.cadre` that links elsewhere
    // must not get a directory, let alone blobs, outside the workspace.
    let dir = root;
    for (const part of WORKSPACE_BLOB_DIR.split(path.sep)) {
      const next = path.join(dir, part);
      await mkdir(next).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      const real = await realpath(next);
      if (!real.startsWith(`${root}${path.sep}`)) throw new BlobError(`${next} leads outside the workspace ${root} (to ${real})`);
      dir = real;
    }
    return new BlobStore(dir);
  }

  async put(value: unknown): Promise<StoredRef> {
    const json = JSON.stringify(value);
    if (json === undefined) throw new BlobError('cannot store an undefined value');
    const sha256 = createHash('sha256').update(json).digest('hex');
    const file = path.join(this.dir, `${sha256}.json`);
    const bytes = Buffer.byteLength(json);
    const present = await stat(file).then((s) => s.size === bytes, () => false);
    if (!present) {
      // Write then rename: a reader never sees half a blob, and two writers of one blob agree.
      const temp = path.join(this.dir, `.${sha256}.${randomBytes(6).toString('hex')}.tmp`);
      try {
        await writeFile(temp, json, { flag: 'wx' });
        await rename(temp, file);
      } finally {
        await rm(temp, { force: true });
      }
    }
    const ref: StoredRef = { $cadre: 'stored', sha256, bytes, kind: kindOf(value), store: this.dir, ...lengthOf(value) };
    cache.set(ref, value);
    return ref;
  }
}

/** Reads and verifies a stored value (cached), from one of the `allowed` stores only. */
export async function readStored(ref: StoredRef, allowed: readonly string[]): Promise<unknown> {
  // A value cached from a store this run may not read is not its to have: read from its own stores, or refused.
  const cached = allowed.includes(ref.store) ? cache.get(ref) : { found: false as const };
  if (cached.found) return cached.value;
  if (!SHA256.test(ref.sha256)) throw new BlobError(`not a stored value: bad hash "${String(ref.sha256).slice(0, 80)}"`);
  // A run that moved to another host (a workspace cloned from a repository) finds its values in its
  // new store, which its pushed branch carried there: the hash, checked below, still decides.
  const store = allowed.includes(ref.store) ? ref.store : await storeHolding(ref.sha256, allowed);
  if (store === undefined) {
    throw new BlobError(`a stored value names the store ${ref.store}, which is not this run's (${allowed.join(', ')})`);
  }
  const file = path.join(store, `${ref.sha256}.json`);
  let text: Buffer;
  try {
    text = await readFile(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new BlobError(`stored value ${file} cannot be read (${code ?? (err as Error).message}): was the workspace cleaned, or is this worker on another machine?`);
  }
  if (createHash('sha256').update(text).digest('hex') !== ref.sha256) throw new BlobError(`stored value ${file} does not match its hash: it was changed`);
  const value: unknown = JSON.parse(text.toString('utf8'));
  cache.set({ ...ref, store }, value);
  return value;
}

async function storeHolding(sha256: string, stores: readonly string[]): Promise<string | undefined> {
  for (const store of stores) if (await stat(path.join(store, `${sha256}.json`)).then((s) => s.isFile(), () => false)) return store;
  return undefined;
}

/** Which part of a stored list holds item `index`, and where in it. */
export function locateItem(list: StoredList, index: number): { part: StoredRef; offset: number } {
  let start = 0;
  for (const part of list.parts) {
    const length = part.length ?? 0;
    if (index < start + length) return { part, offset: index - start };
    start += length;
  }
  throw new BlobError(`a stored list of ${list.length} items has no item ${index}`);
}

export function kindOf(value: unknown): JsonKind {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  const type = typeof value;
  return type === 'string' || type === 'number' || type === 'boolean' ? type : 'object';
}

function lengthOf(value: unknown): { length?: number } {
  if (Array.isArray(value) || typeof value === 'string') return { length: value.length };
  return {};
}

/**
 * Parsed stored values, most recently used last, up to a budget of their JSON size: forEach items
 * read one stored list many times, and a blob's content never changes.
 */
class ValueCache {
  private readonly entries = new Map<string, { value: unknown; bytes: number }>();
  private bytes = 0;

  constructor(private readonly budget: number) {}

  get(ref: StoredRef): { found: true; value: unknown } | { found: false } {
    const key = `${ref.store}/${ref.sha256}`;
    const entry = this.entries.get(key);
    if (!entry) return { found: false };
    this.entries.delete(key);
    this.entries.set(key, entry);
    return { found: true, value: entry.value };
  }

  set(ref: StoredRef, value: unknown): void {
    if (ref.bytes > this.budget) return;
    const key = `${ref.store}/${ref.sha256}`;
    if (this.entries.has(key)) return;
    this.entries.set(key, { value, bytes: ref.bytes });
    this.bytes += ref.bytes;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.budget) break;
      this.entries.delete(oldest);
      this.bytes -= entry.bytes;
    }
  }
}

const cache = new ValueCache(128 * 1024 * 1024);
