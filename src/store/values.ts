/**
 * Moving values between history and the blob store: `externalize` replaces the big parts of a
 * step output with `StoredRef`s, keeping small fields (an exit code, a count) in history where
 * workflows can read them; `materialize` turns stored values and deferred reads back into plain
 * values for the activity or client that needs them.
 */
import {
  type Stored,
  type StoredList,
  type StoredRef,
  hasDeferred,
  isDeferredRead,
  isDeferredText,
  isStored,
} from '../plan-format/refs';
import { type StoredLoader, readDeferred, renderText } from '../plan-format/templates';
import { type BlobStore, locateItem, readStored } from './blobs';

/** A field of a stored output this big or bigger is stored on its own; smaller ones stay in history. */
export const FIELD_INLINE_MAX = 4 * 1024;

export function jsonBytes(value: unknown): number {
  const json = JSON.stringify(value);
  return json === undefined ? 0 : Buffer.byteLength(json);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && !isStored(value);
}

/**
 * `value`, or a copy whose big parts are stored, so that what stays inline is at most `limit` bytes
 * of JSON. The store is opened only when something must go there (most outputs are small).
 */
export async function externalize(value: unknown, store: BlobStore | (() => Promise<BlobStore>), limit: number): Promise<unknown> {
  const size = jsonBytes(value);
  if (size <= limit) return value;
  return shrink(value, size, limit, typeof store === 'function' ? await store() : store);
}

async function shrink(value: unknown, size: number, budget: number, store: BlobStore): Promise<unknown> {
  if (!isPlainObject(value)) return store.put(value);
  const fields = Object.entries(value)
    .map(([key, field]) => ({ key, field, bytes: jsonBytes(field) }))
    .sort((a, b) => b.bytes - a.bytes);
  const result: Record<string, unknown> = { ...value };
  let total = size;
  for (const { key, field, bytes } of fields) {
    if (total <= budget || bytes < FIELD_INLINE_MAX) break;
    const replaced = await shrink(field, bytes, FIELD_INLINE_MAX, store);
    result[key] = replaced;
    total += jsonBytes(replaced) - bytes;
  }
  // Thousands of small fields: keep none of them inline rather than overflow the budget.
  return total <= budget ? result : store.put(value);
}

/** A stored value the walk needs but the cache does not hold yet. */
class NotLoaded extends Error {
  constructor(readonly ref: StoredRef) {
    super(`stored value ${ref.sha256} not loaded`);
  }
}

export interface MaterializeOptions {
  /** The stores this run may read (its workspace's, the worker's configured one). */
  stores: readonly string[];
}

/** Plain data for `value`: stored values read, deferred reads finished, deferred text joined, at any depth. */
export async function materialize(value: unknown, options: MaterializeOptions): Promise<unknown> {
  if (!hasDeferred(value)) return value;
  return withStored(options, (loader) => expand(value, loader));
}

/**
 * Runs `read` with a loader of stored values. Reads are async and walks are not, so a walk that
 * meets an unread value loads it and starts again (values are immutable, and a walk touches few).
 */
export async function withStored<T>(options: MaterializeOptions, read: (loader: StoredLoader) => T): Promise<T> {
  const loaded = new Map<string, unknown>();
  const key = (ref: StoredRef) => `${ref.store}/${ref.sha256}`;
  const loadPart = (ref: StoredRef): unknown => {
    if (!loaded.has(key(ref))) throw new NotLoaded(ref);
    return loaded.get(key(ref));
  };
  const loader: StoredLoader = {
    whole: (stored: Stored) => (stored.$cadre === 'list' ? wholeList(stored, loadPart) : loadPart(stored)),
    item: (list: StoredList, index: number) => {
      const { part, offset } = locateItem(list, index);
      return (loadPart(part) as unknown[])[offset];
    },
  };
  for (;;) {
    try {
      return read(loader);
    } catch (err) {
      if (!(err instanceof NotLoaded)) throw err;
      loaded.set(key(err.ref), await readStored(err.ref, options.stores));
    }
  }
}

function wholeList(list: StoredList, loadPart: (ref: StoredRef) => unknown): unknown[] {
  return list.parts.flatMap((part) => loadPart(part) as unknown[]);
}

/** `value` with everything stored or deferred in it read through `loader`. */
export function expand(value: unknown, loader: StoredLoader): unknown {
  if (!hasDeferred(value)) return value;
  if (isStored(value)) return expand(loader.whole(value), loader);
  if (isDeferredRead(value)) return expand(readDeferred(value, loader), loader);
  if (isDeferredText(value)) return value.parts.map((part) => (typeof part === 'string' ? part : renderText(expand(part.value, loader)))).join('');
  if (Array.isArray(value)) return value.map((item) => expand(item, loader));
  return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, expand(v, loader)]));
}

/** Every blob store the stored values inside `value` name (a client reads a run's own output from them). */
export function storesIn(value: unknown): string[] {
  const stores = new Set<string>();
  const todo: unknown[] = [value];
  while (todo.length > 0) {
    const item = todo.pop();
    if (item === null || typeof item !== 'object') continue;
    if (isStored(item)) {
      for (const ref of item.$cadre === 'list' ? item.parts : [item]) stores.add(ref.store);
      continue;
    }
    if (isDeferredRead(item)) todo.push(item.from);
    else todo.push(...(Array.isArray(item) ? item : Object.values(item)));
  }
  return [...stores];
}
