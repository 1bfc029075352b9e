/**
 * `{{ path }}` templates in step parameters. A path is a root name followed by
 * `.name`, `[0]`, `["key"]` or `[*]` (maps the rest of the path over an array).
 * A string that is one whole template keeps the value's type; templates inside
 * longer strings are rendered as text (objects as JSON). Pure and deterministic:
 * used by the validator and by workflows.
 */
import { MAX_TEMPLATE_LENGTH } from './limits';
import { type DeferredRead, type DeferredText, type Segment, type Stored, type StoredList, hasDeferred, isDeferredRead, isStored } from './refs';

export type { Segment } from './refs';

export interface TemplatePath {
  root: string;
  segments: Segment[];
  source: string;
  /** `| default(<value>)`: what a missing value reads as instead of failing the step. */
  fallback?: { value: unknown };
}

export class TemplateError extends Error {}

const TEMPLATE = /\{\{([\s\S]*?)\}\}/g;
const WHOLE = /^\{\{([\s\S]*?)\}\}$/;
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*/;

const DEFAULT_FILTER = /\|\s*default\s*\(([\s\S]*)\)\s*$/;

export function parsePath(source: string): TemplatePath {
  // A path, not a program: longer text inside {{ }} is a mistake, and kept out of the regexes below.
  if (source.length > MAX_TEMPLATE_LENGTH) {
    throw new TemplateError(`bad template "{{${source.slice(0, 40)}…}}": ${source.length} characters inside {{ }}, at most ${MAX_TEMPLATE_LENGTH}`);
  }
  const filter = DEFAULT_FILTER.exec(source);
  const path = parseBarePath(filter ? source.slice(0, filter.index) : source, source);
  return filter ? { ...path, fallback: { value: parseLiteral(filter[1], source) } } : path;
}

/** The argument of `default(...)`: a JSON literal, or a string in single quotes (easier inside YAML). */
function parseLiteral(text: string, source: string): unknown {
  const trimmed = text.trim();
  const single = /^'([^']*)'$/.exec(trimmed);
  if (single) return single[1];
  try {
    return JSON.parse(trimmed);
  } catch {
    throw new TemplateError(`bad template "{{${source}}}": default(...) takes a JSON value or a 'quoted string', got ${trimmed || 'nothing'}`);
  }
}

function parseBarePath(pathText: string, source: string): TemplatePath {
  const text = pathText.trim();
  const root = IDENT.exec(text);
  if (!root) throw new TemplateError(`bad template "{{${source}}}": expected a name like steps.<id>.output`);
  const segments: Segment[] = [];
  let rest = text.slice(root[0].length);
  while (rest.length > 0) {
    let match: RegExpExecArray | null;
    if ((match = /^\.([A-Za-z0-9_-]+)/.exec(rest))) segments.push({ key: match[1] });
    else if ((match = /^\[\s*\*\s*\]/.exec(rest))) segments.push({ all: true });
    else if ((match = /^\[\s*(\d+)\s*\]/.exec(rest))) segments.push({ index: Number(match[1]) });
    else if ((match = /^\[\s*(?:"([^"]*)"|'([^']*)')\s*\]/.exec(rest))) segments.push({ key: match[1] ?? match[2] });
    else if (rest.trimStart().startsWith('|')) throw new TemplateError(`bad template "{{${source}}}": the only filter is | default(<value>)`);
    else throw new TemplateError(`bad template "{{${source}}}": cannot read "${rest}"`);
    rest = rest.slice(match[0].length);
  }
  return { root: root[0], segments, source: text };
}

/** Every template path in a string, in order. */
export function pathsInString(text: string): TemplatePath[] {
  const paths: TemplatePath[] = [];
  for (const match of text.matchAll(TEMPLATE)) paths.push(parsePath(match[1]));
  const unclosed = text.replace(TEMPLATE, '');
  if (unclosed.includes('{{')) throw new TemplateError(`bad template in "${text}": "{{" without "}}"`);
  return paths;
}

/**
 * Walks a JSON-like value and yields each string with its location (`with.command`), in order.
 * Iterative: a value nested thousands deep costs heap, not stack.
 */
export function* stringsIn(value: unknown, location: string): Generator<{ text: string; location: string }> {
  const stack: { value: unknown; location: string }[] = [{ value, location }];
  while (stack.length > 0) {
    const next = stack.pop()!;
    if (typeof next.value === 'string') yield { text: next.value, location: next.location };
    else if (Array.isArray(next.value)) {
      for (let i = next.value.length - 1; i >= 0; i--) stack.push({ value: next.value[i], location: `${next.location}[${i}]` });
    } else if (next.value !== null && typeof next.value === 'object') {
      const entries = Object.entries(next.value);
      for (let i = entries.length - 1; i >= 0; i--) stack.push({ value: entries[i][1], location: `${next.location}.${entries[i][0]}` });
    }
  }
}

export function isWholeTemplate(text: string): boolean {
  return WHOLE.test(text) && text.indexOf('{{', 2) === -1;
}

export interface ResolveOptions {
  /**
   * A value a template reads must exist (default). Runs recorded before this rule read a missing
   * value as nothing, and replay that way with `strict: false`.
   */
  strict?: boolean;
  /** Reads stored values (activities, clients). Without it (workflows) reads into them are deferred. */
  load?: StoredLoader;
}

/** Reads stored values, synchronously: callers load what a walk needs first (see store/). */
export interface StoredLoader {
  whole(value: Stored): unknown;
  /** One item of a stored list, without reading every part. */
  item(list: StoredList, index: number): unknown;
}

/** A template read something that is not there, and said no `| default(...)`. */
export class MissingValueError extends TemplateError {}

interface ReadContext {
  path: TemplatePath;
  scope: Record<string, unknown>;
  load?: StoredLoader;
}

export function lookup(path: TemplatePath, scope: Record<string, unknown>, options: ResolveOptions = {}): unknown {
  if (options.strict === false) return legacyWalk(scope[path.root], path.segments);
  return withFallback(path, () => read(path.segments, scope[path.root], path.root, { path, scope, load: options.load }));
}

/** Finishes a read a workflow deferred, with the stored values it reached now readable. */
export function readDeferred(deferred: DeferredRead, load: StoredLoader): unknown {
  const path: TemplatePath = { ...parsePath(deferred.source), ...(deferred.fallback && { fallback: deferred.fallback }) };
  return withFallback(path, () => read(deferred.path, deferred.from, deferred.at, { path, scope: {}, load }));
}

function withFallback(path: TemplatePath, reading: () => unknown): unknown {
  try {
    const value = reading();
    return value === null && path.fallback ? path.fallback.value : value;
  } catch (err) {
    if (err instanceof MissingValueError && path.fallback) return path.fallback.value;
    throw err;
  }
}

function read(segments: Segment[], start: unknown, root: string, ctx: ReadContext): unknown {
  let value = start;
  let at = root;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i];
    if (isDeferredRead(value)) {
      // A forEach item of a stored list, say: read further into it, now or later.
      if (!ctx.load) return { ...value, path: [...value.path, ...segments.slice(i)], source: ctx.path.source, ...(ctx.path.fallback && { fallback: ctx.path.fallback }) };
      value = readDeferred(value, ctx.load);
    }
    if (isStored(value)) {
      if (!ctx.load) {
        const { path } = ctx;
        return { $cadre: 'read', from: value, path: segments.slice(i), at, source: path.source, ...(path.fallback && { fallback: path.fallback }) } satisfies DeferredRead;
      }
      if (value.$cadre === 'list' && 'index' in segment) {
        if (segment.index >= value.length) throw missing(ctx, at, `has no [${segment.index}] (it has ${value.length} items)`);
        value = ctx.load.item(value, segment.index);
        at += `[${segment.index}]`;
        continue;
      }
      value = ctx.load.whole(value);
    }
    if ('all' in segment) {
      if (!Array.isArray(value)) throw missing(ctx, at, `is ${kindOf(value)}, not a list`);
      const rest = segments.slice(i + 1);
      return value.map((item, j) => read(rest, item, `${at}[${j}]`, ctx));
    }
    const name = 'index' in segment ? `[${segment.index}]` : `.${segment.key}`;
    if (value === null || typeof value !== 'object') throw missing(ctx, at, `is ${kindOf(value)}, so it has no ${name}`);
    const key = 'index' in segment ? segment.index : segment.key;
    if (!Object.prototype.hasOwnProperty.call(value, key)) {
      const size = Array.isArray(value) ? ` (it has ${value.length} item${value.length === 1 ? '' : 's'})` : '';
      throw missing(ctx, at, `has no ${name}${size}${truncatedHint(value)}`);
    }
    value = (value as Record<string | number, unknown>)[key];
    at += name;
  }
  if (value === undefined) throw missing(ctx, at, 'has no value');
  return value;
}

function missing({ path, scope }: ReadContext, at: string, what: string): MissingValueError {
  return new MissingValueError(`{{ ${path.source} }} reads nothing: ${at} ${what}${stepHint(path, scope)}; add | default(...) where a missing value is fine`);
}

/** Why a step has no output to read: it was skipped, or has not run. */
function stepHint(path: TemplatePath, scope: Record<string, unknown>): string {
  const first = path.segments[0];
  if (path.root !== 'steps' || !first || !('key' in first)) return '';
  const status = ((scope.steps as Record<string, { status?: string }> | undefined)?.[first.key])?.status;
  return status && status !== 'completed' ? ` (step "${first.key}" is ${status})` : '';
}

function truncatedHint(value: object): string {
  return (value as { truncated?: unknown }).truncated ? ' (the output was cut short: see its "truncated" field)' : '';
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'empty';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

function legacyWalk(value: unknown, segments: Segment[]): unknown {
  if (segments.length === 0) return value;
  const [segment, ...rest] = segments;
  if ('all' in segment) return Array.isArray(value) ? value.map((item) => legacyWalk(item, rest)) : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  const key = 'index' in segment ? segment.index : segment.key;
  if (!Object.prototype.hasOwnProperty.call(value, key)) return undefined;
  return legacyWalk((value as Record<string | number, unknown>)[key], rest);
}

/** How a value reads inside longer text: strings as they are, objects as JSON, nothing as "". */
export function renderText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/**
 * Resolves every template inside a JSON-like value against `scope`. Reads into stored values
 * come back deferred (see refs.ts), for the activity that gets them to read.
 */
export function resolveTemplates(value: unknown, scope: Record<string, unknown>, options: ResolveOptions = {}): unknown {
  if (typeof value === 'string') {
    if (!value.includes('{{')) return value;
    if (isWholeTemplate(value)) return lookup(parsePath(value.slice(2, -2)), scope, options);
    return interpolate(value, scope, options);
  }
  if (Array.isArray(value)) return value.map((item) => resolveTemplates(item, scope, options));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, resolveTemplates(item, scope, options)]));
  }
  return value;
}

function interpolate(text: string, scope: Record<string, unknown>, options: ResolveOptions): string | DeferredText {
  const parts: DeferredText['parts'] = [];
  let deferred = false;
  let last = 0;
  for (const match of text.matchAll(TEMPLATE)) {
    parts.push(text.slice(last, match.index));
    const value = lookup(parsePath(match[1]), scope, options);
    if (hasDeferred(value)) {
      deferred = true;
      parts.push({ value });
    } else parts.push(renderText(value));
    last = (match.index ?? 0) + match[0].length;
  }
  parts.push(text.slice(last));
  if (!deferred) return parts.join('');
  return { $cadre: 'text', parts: mergeText(parts) };
}

function mergeText(parts: DeferredText['parts']): DeferredText['parts'] {
  const merged: DeferredText['parts'] = [];
  for (const part of parts) {
    const previous = merged[merged.length - 1];
    if (typeof part === 'string' && typeof previous === 'string') merged[merged.length - 1] = previous + part;
    else if (part !== '') merged.push(part);
  }
  return merged;
}
