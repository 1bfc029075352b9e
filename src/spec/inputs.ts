/** Turns `--input k=v` strings into typed plan inputs, with defaults. */
import type { CompiledPlan } from './types';
import type { PlanIssue } from './validate';

export function resolveInputs(
  plan: CompiledPlan,
  given: Record<string, unknown>,
): { ok: true; values: Record<string, unknown> } | { ok: false; issues: PlanIssue[] } {
  const issues: PlanIssue[] = [];
  const values: Record<string, unknown> = {};
  for (const name of Object.keys(given)) {
    if (!(name in plan.inputs)) issues.push({ path: `inputs.${name}`, message: `plan "${plan.name}" has no input "${name}"` });
  }
  for (const [name, spec] of Object.entries(plan.inputs)) {
    const raw = name in given ? given[name] : spec.default;
    if (raw === undefined) {
      issues.push({ path: `inputs.${name}`, message: 'missing (give it with --input name=value)' });
      continue;
    }
    const value = typeof raw === 'string' ? coerce(raw, spec.type) : raw;
    if (value === undefined || (spec.type !== 'json' && typeof value !== spec.type)) {
      issues.push({ path: `inputs.${name}`, message: `expected ${spec.type === 'json' ? 'JSON' : `a ${spec.type}`}, got ${JSON.stringify(raw)}` });
    } else values[name] = value;
  }
  return issues.length > 0 ? { ok: false, issues } : { ok: true, values };
}

function coerce(raw: string, type: string): unknown {
  switch (type) {
    case 'number':
      return raw.trim() !== '' && Number.isFinite(Number(raw)) ? Number(raw) : undefined;
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
