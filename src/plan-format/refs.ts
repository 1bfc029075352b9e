/**
 * Values kept outside Temporal's history. A step output bigger than a threshold is written to a
 * content-addressed file by the activity that produced it, and the output holds a `StoredRef`
 * in its place. Workflows never read files, so a template that reads into a stored value
 * resolves to a `DeferredRead`, and text that embeds one to a `DeferredText`; the activity that
 * receives them (or a small activity the workflow calls) reads the files. Pure: used by the
 * validator, workflows, activities and the client alike.
 */
/** One step of a path into a value: `.name`, `[0]`, or `[*]` (the rest of the path over every item). */
export type Segment = { key: string } | { index: number } | { all: true };

export type JsonKind = 'string' | 'number' | 'boolean' | 'null' | 'array' | 'object';

/** One JSON value in a file `<store>/<sha256>.json`. */
export interface StoredRef {
  $cadre: 'stored';
  sha256: string;
  /** Size of the stored JSON. */
  bytes: number;
  kind: JsonKind;
  /** Items of an array, characters of a string. */
  length?: number;
  /** Absolute directory of the blob store on the workers (the workspace's `.cadre/blobs` by default). */
  store: string;
}

/** A long list stored in parts (a forEach run in child workflows): the concatenation of `parts`, each an array. */
export interface StoredList {
  $cadre: 'list';
  parts: StoredRef[];
  length: number;
}

export type Stored = StoredRef | StoredList;

/** `{{ steps.x.output.json.items[3] }}` where `json` is stored: read when the value is needed. */
export interface DeferredRead {
  $cadre: 'read';
  from: Stored;
  path: Segment[];
  /** Where the stored value sits (`steps.x.output.json`), and the whole template, for messages. */
  at: string;
  source: string;
  fallback?: { value: unknown };
}

/** Text with deferred values inside: each `{ value }` is read, rendered as templates render, and joined. */
export interface DeferredText {
  $cadre: 'text';
  parts: (string | { value: unknown })[];
}

export type Deferred = Stored | DeferredRead | DeferredText;

function tagged(value: unknown, tag: string): boolean {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && (value as { $cadre?: unknown }).$cadre === tag;
}

export function isStored(value: unknown): value is Stored {
  return tagged(value, 'stored') || tagged(value, 'list');
}

export function isDeferredRead(value: unknown): value is DeferredRead {
  return tagged(value, 'read');
}

export function isDeferredText(value: unknown): value is DeferredText {
  return tagged(value, 'text');
}

/** True when `value` holds anything a workflow cannot see into (a stored value or a deferred read), at any depth. */
export function hasDeferred(value: unknown): boolean {
  const todo: unknown[] = [value];
  while (todo.length > 0) {
    const item = todo.pop();
    if (item === null || typeof item !== 'object') continue;
    if (isStored(item) || isDeferredRead(item) || isDeferredText(item)) return true;
    for (const child of Array.isArray(item) ? item : Object.values(item)) todo.push(child);
  }
  return false;
}

export function describeStored(value: Stored): string {
  if (value.$cadre === 'list') return `a list of ${value.length} items stored in ${value.parts.length} parts`;
  const size = value.bytes >= 1024 * 1024 ? `${(value.bytes / (1024 * 1024)).toFixed(1)} MiB` : `${Math.ceil(value.bytes / 1024)} KiB`;
  return `${value.kind}${value.length !== undefined ? ` of ${value.length} ${value.kind === 'string' ? 'characters' : 'items'}` : ''}, ${size}, stored as ${value.store}/${value.sha256}.json`;
}
