/**
 * Workflow inputs as any Temporal client may send them (the `temporal` CLI, the Web UI, another
 * SDK): checked before use, so `null`, a list or a missing field ends the run with a typed,
 * non-retryable failure naming the field, never a JavaScript error that fails workflow tasks.
 * Pure: no commands, so runs recorded before these checks replay unchanged.
 */
import { ApplicationFailure } from '@temporalio/workflow';

/** A problem with a value, at a path below it (`plan.steps[0].id: missing`), or undefined. */
export type Check = (value: unknown, at: string) => string | undefined;

function describe(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return `a ${typeof value}`;
}

const kind =
  (what: string, test: (value: unknown) => boolean): Check =>
  (value, at) =>
    test(value) ? undefined : `${at || 'the input'}: ${value === undefined ? 'missing' : `${describe(value)}, expected ${what}`}`;

export const text = kind('text', (v) => typeof v === 'string');
export const count = kind('a number', (v) => typeof v === 'number' && Number.isFinite(v));
export const flag = kind('true or false', (v) => typeof v === 'boolean');
export const map = kind('an object', (v) => typeof v === 'object' && v !== null && !Array.isArray(v));

export function oneOf(...values: string[]): Check {
  return kind(`one of ${values.join(', ')}`, (v) => typeof v === 'string' && values.includes(v));
}

export function optional(check: Check): Check {
  return (value, at) => (value === undefined ? undefined : check(value, at));
}

export function listOf(item: Check): Check {
  return (value, at) => {
    if (!Array.isArray(value)) return kind('a list', () => false)(value, at);
    for (const [i, v] of value.entries()) {
      const problem = item(v, `${at}[${i}]`);
      if (problem) return problem;
    }
    return undefined;
  };
}

/** An object with these fields (others are let through: newer clients may send more). */
export function shape(fields: Record<string, Check>, more?: (value: Record<string, unknown>, at: string) => string | undefined): Check {
  return (value, at) => {
    const notMap = map(value, at);
    if (notMap) return notMap;
    const object = value as Record<string, unknown>;
    for (const [name, check] of Object.entries(fields)) {
      const problem = check(object[name], at ? `${at}.${name}` : name);
      if (problem) return problem;
    }
    return more?.(object, at);
  };
}

/** Ends the run when its input fails the check. */
export function checkInput(workflowType: string, input: unknown, check: Check): void {
  const problem = check(input, '');
  if (problem) throw ApplicationFailure.create({ type: 'BadWorkflowInput', message: `${workflowType}: bad input: ${problem}`, nonRetryable: true });
}

/** Signals from anyone: a handler takes only a well-formed one and drops the rest (a signal has no one to answer). */
export function wellFormed(value: unknown, check: Check): boolean {
  return check(value, '') === undefined;
}
