/**
 * Turns `--input k=v` strings (or values given through the API) into typed plan inputs, with
 * defaults. Strict: a number is written as JSON writes numbers (`12`, `-0.5`, `1e3`), so
 * `0x10`, ` 12 `, `Infinity` and `1e999` are not numbers; booleans are `true` or `false`.
 */
import { jsonValueIssues } from './json-values';
import type { CompiledPlan, InputSpec } from './types';
import { shorten } from './text';

export interface InputIssue {
  path: string;
  message: string;
}

export function resolveInputs(
  plan: CompiledPlan,
  given: Record<string, unknown>,
): { ok: true; values: Record<string, unknown> } | { ok: false; issues: InputIssue[] } {
  const issues: InputIssue[] = [];
  const values: Record<string, unknown> = {};
  for (const name of Object.keys(given)) {
    if (!Object.prototype.hasOwnProperty.call(plan.inputs, name)) {
      issues.push({ path: `inputs.${shorten(name, 40)}`, message: `plan "${plan.name}" has no input "${shorten(name, 40)}"` });
    }
  }
  for (const [name, spec] of Object.entries(plan.inputs)) {
    const raw = Object.prototype.hasOwnProperty.call(given, name) ? given[name] : spec.default;
    if (raw === undefined) {
      issues.push({ path: `inputs.${name}`, message: 'missing (give it with --input name=value)' });
      continue;
    }
    const typed = typedInput(raw, spec.type, `inputs.${name}`);
    if (typed.ok) values[name] = typed.value;
    else issues.push(...typed.issues);
  }
  return issues.length > 0 ? { ok: false, issues } : { ok: true, values };
}

/** An input's value as its type: strings are parsed (`--input n=3`), other values must already have the type. */
export function typedInput(
  raw: unknown,
  type: InputSpec['type'],
  path: string,
): { ok: true; value: unknown } | { ok: false; issues: InputIssue[] } {
  const value = typeof raw === 'string' ? parse(raw, type) : raw;
  const expected = type === 'json' ? 'JSON' : `a ${type}`;
  const wrong = () => ({ ok: false as const, issues: [{ path, message: `expected ${expected}, got ${describe(raw)}` }] });
  if (value === undefined) return wrong();
  if (type === 'json') {
    const issues = jsonValueIssues(value, path);
    return issues.length > 0 ? { ok: false, issues } : { ok: true, value };
  }
  if (typeof value !== type || (type === 'number' && !Number.isFinite(value))) return wrong();
  return { ok: true, value };
}

/** JSON's number grammar, nothing else that `Number()` would accept. */
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

function parse(raw: string, type: InputSpec['type']): unknown {
  switch (type) {
    case 'number': {
      if (!JSON_NUMBER.test(raw)) return undefined;
      const n = Number(raw);
      return Number.isFinite(n) ? n : undefined;
    }
    case 'boolean':
      return raw === 'true' ? true : raw === 'false' ? false : undefined;
    case 'json':
      try {
        return JSON.parse(raw);
      } catch {
        return undefined;
      }
    default:
      return raw;
  }
}

function describe(raw: unknown): string {
  if (typeof raw === 'string') return JSON.stringify(shorten(raw));
  if (typeof raw === 'number' || typeof raw === 'boolean' || raw === null) return String(raw);
  return Array.isArray(raw) ? 'a list' : `a ${typeof raw}`;
}
