/**
 * What workflow code does with values stored outside history (see spec/refs.ts): it never reads
 * them, it knows when it would need to, and it hands that reading to small activities. Pure, beside
 * refs.ts: what the plan format's stored values mean to the code that runs a plan.
 */
import { namesIn } from './expressions';
import { type DeferredRead, hasDeferred, isDeferredRead, isStored } from './refs';
import { parsePath } from './templates';

export interface Items {
  length: number;
  at(index: number): unknown;
}

/** The items of a forEach list: a plain list, or a stored one read item by item by the activities. */
export function listItems(value: unknown, source: string): Items | undefined {
  if (Array.isArray(value)) return { length: value.length, at: (i) => value[i] };
  if (!isStored(value)) return undefined;
  const length = value.$cadre === 'list' ? value.length : value.kind === 'array' ? value.length : undefined;
  if (length === undefined) return undefined;
  // Items read by path from the list: `steps.x.output.json.items[3]` (without any `| default(...)`).
  const template = source.trim().replace(/^\{\{|\}\}$/g, '');
  const at = template ? parsePath(template).source : 'forEach';
  return {
    length,
    at: (index): DeferredRead => ({ $cadre: 'read', from: value, path: [{ index }], at, source: `${at}[${index}]` }),
  };
}

/** Names an expression reads, parsed once per expression. */
export class ExpressionNames {
  private readonly cache = new Map<string, string[][]>();

  of(expression: string): string[][] {
    let names = this.cache.get(expression);
    if (!names) {
      names = namesIn(expression);
      this.cache.set(expression, names);
    }
    return names;
  }

  /** True when a name the expression reads runs into a stored value, which only an activity can read. */
  readsStored(expression: string, scope: Record<string, unknown>): boolean {
    return this.of(expression).some((chain) => {
      let cursor: unknown = scope;
      for (const key of chain) {
        if (isStored(cursor) || isDeferredRead(cursor)) return true;
        if (cursor === null || typeof cursor !== 'object') return false;
        cursor = (cursor as Record<string, unknown>)[key];
      }
      return hasDeferred(cursor);
    });
  }

  /** The part of `scope` an expression reads (its steps, inputs and loop names): what an activity needs. */
  subset(expression: string, scope: Record<string, unknown>): Record<string, unknown> {
    const subset: Record<string, unknown> = {};
    const steps = scope.steps as Record<string, unknown> | undefined;
    for (const [root, next] of this.of(expression)) {
      if (root === 'steps' && next !== undefined && steps && next in steps) {
        subset.steps = { ...(subset.steps as object), [next]: steps[next] };
      } else if (root !== 'steps' && root in scope) subset[root] = scope[root];
    }
    return subset;
  }
}
