/**
 * Iterative walks over user data (plan values, inputs): nothing here recurses, so a value
 * nested 100,000 deep is reported, not a stack overflow. Pure.
 */
import { MAX_NESTING_DEPTH, utf8Length } from './limits';
import { shorten } from './text';

export interface ValueIssue {
  path: string;
  message: string;
}

type Key = string | number;

/** A node of a walk: the path is only built when something is reported. */
interface Node {
  key?: Key;
  parent?: Node;
}

export function childPath(parent: string, key: Key): string {
  return typeof key === 'number' ? `${parent}[${key}]` : `${parent}.${shorten(key, 40)}`;
}

/** Paths deeper than this show their first keys and `…`: a value nested 3,000 deep is not a 9,000-character path. */
function pathOf(node: Node, root: string, keysShown: number): string {
  const keys: Key[] = [];
  for (let n: Node | undefined = node; n?.key !== undefined; n = n.parent) keys.push(n.key);
  keys.reverse();
  const path = keys.slice(0, keysShown).reduce<string>(childPath, root);
  return keys.length > keysShown ? `${path}…` : path;
}

/** Where a value is too deep, a few keys say which value it is. */
const DEPTH_PATH_KEYS = 4;
/** Parts of a payload are named in full (plan paths are a handful of keys), up to this. */
const PART_PATH_KEYS = 16;

/** Marks references to stored values (spec/refs.ts): a plan or input that wrote one would pass for a stored value. */
const RESERVED_KEY = '$cadre';

/** Keeps a walk's report short: a value with a million bad numbers is one line plus a count. */
const MAX_ISSUES_PER_VALUE = 5;

/**
 * Problems that make a value unfit to travel as JSON through Temporal: nesting deeper than
 * `maxDepth` (templates and JSON encoding walk values recursively), numbers JSON cannot carry
 * (NaN, Infinity), values that are not plain data (dates, maps, binary from YAML tags), and the
 * key cadre reserves for stored values.
 */
export function jsonValueIssues(value: unknown, root: string, maxDepth = MAX_NESTING_DEPTH): ValueIssue[] {
  const issues: ValueIssue[] = [];
  let extra = 0;
  const report = (node: Node, message: string) => {
    if (issues.length < MAX_ISSUES_PER_VALUE) issues.push({ path: pathOf(node, root, DEPTH_PATH_KEYS), message });
    else extra++;
  };
  const stack: { value: unknown; depth: number; node: Node }[] = [{ value, depth: 0, node: {} }];
  while (stack.length > 0) {
    const { value: v, depth, node } = stack.pop()!;
    const problem = notJson(v);
    if (problem) {
      report(node, problem);
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth >= maxDepth) {
      report(node, `nested more than ${maxDepth} levels deep: flatten it, or keep the data in a file and read it with fs.read`);
      continue;
    }
    if (!Array.isArray(v) && Object.prototype.hasOwnProperty.call(v, RESERVED_KEY)) {
      report({ key: RESERVED_KEY, parent: node }, `the key "${RESERVED_KEY}" is reserved for values cadre keeps outside history: name it otherwise`);
    }
    const entries: [Key, unknown][] = Array.isArray(v) ? v.map((item, i) => [i, item]) : Object.entries(v);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, item] = entries[i];
      stack.push({ value: item, depth: depth + 1, node: { key, parent: node } });
    }
  }
  if (extra > 0) issues.push({ path: root, message: `and ${extra} more such problem${extra === 1 ? '' : 's'} in this value` });
  return issues;
}

function notJson(value: unknown): string | undefined {
  switch (typeof value) {
    case 'undefined': // absent, as JSON.stringify leaves it out
    case 'string':
    case 'boolean':
      return undefined;
    case 'number':
      return Number.isFinite(value) ? undefined : `${String(value)} is not a number JSON can carry: use a finite number or a string`;
    case 'object':
      if (value === null || Array.isArray(value)) return undefined;
      if (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null) return undefined;
      return `a ${(value as object).constructor?.name ?? 'special'} value is not plain data: write it as a string, number, list or map`;
    default:
      return `a ${typeof value} is not plain data: write it as a string, number, list or map`;
  }
}

export interface SizePart {
  path: string;
  bytes: number;
  /** True when `bytes` is what is left of the node besides its other listed parts. */
  rest: boolean;
}

export interface JsonSize {
  /** UTF-8 bytes of `JSON.stringify(value)`. */
  bytes: number;
  /** The biggest contributors, largest first. */
  parts: SizePart[];
}

interface SizeFrame extends Node {
  value: unknown;
  entries?: [Key, unknown][];
  next: number;
  bytes: number;
  bigChildren: number;
}

/**
 * The size of a value as JSON, and the parts that make it big: the smallest subtrees of at
 * least `partBytes`, plus what remains of a node besides those when that remainder is big.
 */
export function measureJson(value: unknown, root: string, partBytes: number): JsonSize {
  const parts: { node: Node; bytes: number; rest: boolean }[] = [];
  const stack: SizeFrame[] = [{ value, next: 0, bytes: 0, bigChildren: 0 }];
  let total = 0;
  while (stack.length > 0) {
    const frame = stack[stack.length - 1];
    const v = frame.value;
    if (frame.entries === undefined && v !== null && typeof v === 'object' && !hasToJSON(v)) {
      frame.entries = Array.isArray(v)
        ? v.map((item, i) => [i, item])
        : Object.entries(v).filter(([, item]) => item !== undefined && typeof item !== 'function' && typeof item !== 'symbol');
      frame.bytes = 2 + Math.max(0, frame.entries.length - 1);
      if (!Array.isArray(v)) for (const [key] of frame.entries) frame.bytes += utf8Length(JSON.stringify(key)) + 1;
    }
    if (frame.entries && frame.next < frame.entries.length) {
      const [key, item] = frame.entries[frame.next++];
      stack.push({ value: item, key, parent: frame, next: 0, bytes: 0, bigChildren: 0 });
      continue;
    }
    stack.pop();
    if (!frame.entries) frame.bytes = leafBytes(v);
    const rest = frame.bytes - frame.bigChildren;
    if (rest >= partBytes) parts.push({ node: frame, bytes: rest, rest: frame.bigChildren > 0 });
    const parent = frame.parent as SizeFrame | undefined;
    if (!parent) total = frame.bytes;
    else {
      parent.bytes += frame.bytes;
      if (frame.bytes >= partBytes) parent.bigChildren += frame.bytes;
    }
  }
  parts.sort((a, b) => b.bytes - a.bytes);
  return { bytes: total, parts: parts.map((p) => ({ path: pathOf(p.node, root, PART_PATH_KEYS), bytes: p.bytes, rest: p.rest })) };
}

function hasToJSON(value: object): boolean {
  return typeof (value as { toJSON?: unknown }).toJSON === 'function';
}

function leafBytes(value: unknown): number {
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return 4; // "null" in a list
  if (typeof value === 'bigint') return String(value).length;
  return utf8Length(JSON.stringify(value) ?? 'null');
}
