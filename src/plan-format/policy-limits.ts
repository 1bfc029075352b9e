/**
 * Timeouts and retry policies checked against Temporal's limits (limits.ts), each problem at
 * the path where the value was written: a step's own field, or the plan's `defaults`.
 */
import { durationMs, isDuration } from './duration';
import type { PlanIssue } from './issues';
import { type LimitProblem, type RetryLimitsInput, checkDurationMs, checkRetryPolicy } from './limits';

const RETRY_DURATIONS = ['initialInterval', 'maximumInterval'] as const;
const RETRY_NUMBERS = ['maximumAttempts', 'backoffCoefficient'] as const;

export function policyLimitIssues(raw: unknown): PlanIssue[] {
  const plan = asObject(raw);
  const defaults = asObject(plan.defaults);
  const issues: PlanIssue[] = [];
  const add = (problems: LimitProblem[], pathOf: (field: string) => string) =>
    issues.push(...problems.map((p) => ({ path: pathOf(p.field), message: p.message })));

  add(durationProblems(defaults.timeout, 'timeout'), () => 'defaults.timeout');
  const defaultRetry = retryWithPaths([[asObject(defaults.retry), 'defaults.retry']]);
  add(checkRetryPolicy(defaultRetry.values), defaultRetry.pathOf);

  const steps = Array.isArray(plan.steps) ? plan.steps : [];
  steps.forEach((rawStep, i) => {
    const step = asObject(rawStep);
    add(durationProblems(step.timeout, 'timeout'), () => `steps[${i}].timeout`);
    add(durationProblems(asObject(step.ask).timeout, 'timeout'), () => `steps[${i}].ask.timeout`);
    const retry = retryWithPaths([
      [asObject(step.retry), `steps[${i}].retry`],
      [asObject(defaults.retry), 'defaults.retry'],
    ]);
    add(checkRetryPolicy(retry.values), retry.pathOf);
  });
  return issues;
}

function durationProblems(value: unknown, field: string): LimitProblem[] {
  return typeof value === 'string' && isDuration(value) ? checkDurationMs(durationMs(value), field) : [];
}

/** The retry policy a step runs with (its own fields over the defaults'), and where each field came from. */
function retryWithPaths(sources: [Record<string, unknown>, string][]) {
  const values: RetryLimitsInput = {};
  const from = new Map<string, string>();
  for (const [retry, path] of [...sources].reverse()) {
    for (const field of RETRY_DURATIONS) {
      const value = retry[field];
      if (typeof value === 'string' && isDuration(value)) {
        values[field] = durationMs(value);
        from.set(field, path);
      }
    }
    for (const field of RETRY_NUMBERS) {
      const value = retry[field];
      if (typeof value === 'number') {
        values[field] = value;
        from.set(field, path);
      }
    }
  }
  const pathOf = (field: string) => {
    const name = field.replace(/^retry\./, '');
    return `${from.get(name) ?? sources[0][1]}.${name}`;
  };
  return { values, pathOf };
}

function asObject(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
