/**
 * Activities for values a workflow cannot read itself because they are stored outside history:
 * `resolveValue` (a forEach list, a question, a duration) and `evaluateCondition` (a `when` that
 * reads a stored output). Cheap reads of the workspace's blob store; workflows run them as local
 * activities.
 */
import { ExpressionError, evaluateCondition, namesIn } from '../plan-format/expressions';
import { MissingValueError, TemplateError, lookup, type TemplatePath } from '../plan-format/templates';
import { hasDeferred } from '../plan-format/refs';
import { BlobError, BlobStore } from '../store/blobs';
import { expand, externalize, materialize, withStored } from '../store/values';
import { ErrorTypes, permanent } from '../errors/application-failures';

export interface ValueRequest {
  value: unknown;
  workspace: string;
  /** What the result may hold inline; more is stored again and referenced. */
  inlineLimit: number;
}

export interface ConditionRequest {
  expression: string;
  /** The scope the workflow has, stored values and deferred reads included. */
  scope: Record<string, unknown>;
  workspace: string;
}

export interface StoreOptions {
  /** A blob store for every workspace (absolute path), instead of each workspace's `.cadre/blobs`. */
  blobDir?: string;
}

/** The run's blob store, or a permanent failure that says why there is none. */
export async function openStore(workspace: string, options: StoreOptions): Promise<BlobStore> {
  try {
    return await BlobStore.open(workspace, options.blobDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw permanent(ErrorTypes.WorkspaceMissing, `workspace ${workspace} is not a directory on this worker`);
    throw permanent(ErrorTypes.StoredValue, `no blob store for ${workspace}: ${(err as Error).message}`);
  }
}

/** Reading stored values and templates fails for reasons a retry will not change. */
export function asPermanent(err: unknown): unknown {
  if (err instanceof MissingValueError) return permanent(ErrorTypes.MissingValue, err.message);
  if (err instanceof TemplateError || err instanceof ExpressionError) return permanent(ErrorTypes.BadToolInput, err.message);
  if (err instanceof BlobError) return permanent(ErrorTypes.StoredValue, err.message);
  return err;
}

/** Plain parameters for a tool: what templates deferred and outputs stored, read now (the store opened only then). */
export async function readParams(params: unknown, store: () => Promise<BlobStore>): Promise<unknown> {
  if (!hasDeferred(params)) return params;
  const { dir } = await store();
  try {
    return await materialize(params, { stores: [dir] });
  } catch (err) {
    throw asPermanent(err);
  }
}

/** The run's blob store, opened (and checked) on first use, once per activity. */
export function lazyStore(workspace: string, options: StoreOptions): () => Promise<BlobStore> {
  let opened: Promise<BlobStore> | undefined;
  return () => (opened ??= openStore(workspace, options));
}

export function valueActivities(options: StoreOptions) {
  return {
    async resolveValue(request: ValueRequest): Promise<unknown> {
      const store = await openStore(request.workspace, options);
      try {
        return await externalize(await materialize(request.value, { stores: [store.dir] }), store, request.inlineLimit);
      } catch (err) {
        throw asPermanent(err);
      }
    },

    async evaluateCondition(request: ConditionRequest): Promise<boolean> {
      const store = await openStore(request.workspace, options);
      try {
        const scope = await withStored({ stores: [store.dir] }, (loader) => scopeFor(request.expression, (path) => expand(lookup(path, request.scope, { load: loader }), loader)));
        return evaluateCondition(request.expression, scope);
      } catch (err) {
        throw asPermanent(err);
      }
    },
  };
}

/**
 * A plain scope holding just the names an expression reads, each read through the store. A name
 * that is not there is left out, which Jexl reads as undefined, as it would in the workflow.
 */
function scopeFor(expression: string, read: (path: TemplatePath) => unknown): Record<string, unknown> {
  const plain: Record<string, unknown> = {};
  const made = new WeakSet<object>([plain]);
  const chains = namesIn(expression).sort((a, b) => a.length - b.length);
  for (const chain of chains) {
    let value: unknown;
    try {
      value = read({ root: chain[0], segments: chain.slice(1).map((key) => ({ key })), source: chain.join('.') });
    } catch (err) {
      if (err instanceof MissingValueError) continue;
      throw err;
    }
    let target = plain;
    let placed = true;
    for (const key of chain.slice(0, -1)) {
      const next = target[key];
      if (next === undefined) {
        const child = {};
        made.add(child);
        target[key] = child;
        target = child;
      } else if (next !== null && typeof next === 'object' && made.has(next)) target = next as Record<string, unknown>;
      else {
        // A shorter name already holds this value whole: nothing to add (and its objects are not ours to change).
        placed = false;
        break;
      }
    }
    const last = chain[chain.length - 1];
    if (placed && !(last in target)) target[last] = value;
  }
  return plain;
}
