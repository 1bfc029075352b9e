/**
 * cadre's own metrics, beside the SDK's, on the worker's Prometheus endpoint (`cadre worker
 * --metrics-port`): steps started, completed, failed and skipped by tool, run durations by plan
 * and outcome, and how long humans took to answer. The SDK emits workflow metrics only when code
 * runs for the first time, never on replay, and tags them with the namespace, task queue and
 * workflow type.
 */
import { metricMeter } from '@temporalio/workflow';
import type { StepAction } from '../../plan-format/types';

/** What a step runs, as a metric label: the tool's name, or ask, agent or decide. */
export function toolLabel(action: StepAction): string {
  return action.kind === 'tool' ? action.tool : action.kind;
}

export function stepStarted(tool: string): void {
  metricMeter.createCounter('cadre_steps_started', undefined, 'plan steps started (each re-run counts), by tool').add(1, { tool });
}

export function stepEnded(tool: string, status: 'completed' | 'failed' | 'skipped'): void {
  metricMeter.createCounter(`cadre_steps_${status}`, undefined, `plan steps ${status}, by tool`).add(1, { tool });
}

export function runEnded(plan: string, status: 'completed' | 'failed' | 'cancelled' | 'budget_exhausted', durationMs: number): void {
  metricMeter.createHistogram('cadre_run_duration', 'int', 'milliseconds', 'plan runs from start to end, by plan and status').record(Math.max(0, Math.round(durationMs)), { plan, status });
}

export function humanWaited(kind: string, outcome: 'answered' | 'timed_out', durationMs: number): void {
  metricMeter.createHistogram('cadre_human_wait', 'int', 'milliseconds', 'how long a run waited for a person, by kind and outcome').record(Math.max(0, Math.round(durationMs)), { kind, outcome });
}
