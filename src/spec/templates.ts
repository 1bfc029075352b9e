/**
 * `{{ path }}` templates in step parameters. A path is a root name followed by
 * `.name`, `[0]`, `["key"]` or `[*]` (maps the rest of the path over an array).
 * A string that is one whole template keeps the value's type; templates inside
 * longer strings are rendered as text (objects as JSON). Pure and deterministic:
 * used by the validator and by workflows.
 */

export type Segment = { key: string } | { index: number } | { all: true };

export interface TemplatePath {
  root: string;
  segments: Segment[];
  source: string;
}

export class TemplateError extends Error {}

const TEMPLATE = /\{\{([\s\S]*?)\}\}/g;
const WHOLE = /^\{\{([\s\S]*?)\}\}$/;
const IDENT = /^[A-Za-z_][A-Za-z0-9_]*/;

export function parsePath(source: string): TemplatePath {
  const text = source.trim();
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

export function lookup(path: TemplatePath, scope: Record<string, unknown>): unknown {
  return walk(scope[path.root], path.segments);
}

function walk(value: unknown, segments: Segment[]): unknown {
  if (segments.length === 0) return value;
  const [segment, ...rest] = segments;
  if ('all' in segment) return Array.isArray(value) ? value.map((item) => walk(item, rest)) : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  const key = 'index' in segment ? segment.index : segment.key;
  if (!Object.prototype.hasOwnProperty.call(value, key)) return undefined;
  return walk((value as Record<string | number, unknown>)[key], rest);
}

function render(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'object') return JSON.stringify(value);
  return String(value);
}

/** Resolves every template inside a JSON-like value against `scope`. */
export function resolveTemplates(value: unknown, scope: Record<string, unknown>): unknown {
  if (typeof value === 'string') {
    if (!value.includes('{{')) return value;
    if (isWholeTemplate(value)) return lookup(parsePath(value.slice(2, -2)), scope);
    return value.replace(TEMPLATE, (_, source: string) => render(lookup(parsePath(source), scope)));
  }
  if (Array.isArray(value)) return value.map((item) => resolveTemplates(item, scope));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, resolveTemplates(item, scope)]));
  }
  return value;
}
