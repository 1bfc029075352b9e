/**
 * The start request: the compiled plan and its inputs travel as one JSON payload, which
 * Temporal refuses above its payload limit. Problems name the parts of the plan that make it big.
 */
import type { PlanIssue } from './issues';
import { type SizePart, measureJson } from './json-values';
import { MAX_START_PAYLOAD_BYTES, PAYLOAD_LIMIT_BYTES, PAYLOAD_WARN_BYTES } from './limits';
import { formatBytes } from './text';
import type { CompiledPlan, RunPlanInput } from './types';

/** Parts smaller than this are not named on their own. */
const PART_BYTES = 16 * 1024;
const PARTS_SHOWN = 3;

export interface PayloadCheck {
  bytes: number;
  /** Set when the payload is over the limit: at the path of the biggest part. */
  problem?: PlanIssue;
  /** Set when the payload passes Temporal's warning threshold. */
  warning?: PlanIssue;
}

/**
 * Checks the start payload of a plan with the inputs it is started with. `inputLabel` names a
 * given input in messages: `inputs.x.default` when validating, `input "x"` when starting.
 */
export function checkStartPayload(plan: CompiledPlan, inputs: Record<string, unknown>, inputLabel: (name: string) => string): PayloadCheck {
  const payload: RunPlanInput = { plan, inputs };
  const size = measureJson(payload, '', PART_BYTES);
  const parts = size.parts.map((part) => ({ ...part, path: planPath(part.path, inputLabel) }));
  if (size.bytes > MAX_START_PAYLOAD_BYTES) return { bytes: size.bytes, problem: overLimit('the plan and its inputs come', size.bytes, parts) };
  if (size.bytes > PAYLOAD_WARN_BYTES) {
    return {
      bytes: size.bytes,
      warning: {
        path: parts[0]?.path ?? '',
        message:
          `the plan and its inputs come to ${formatBytes(size.bytes)} as JSON, past Temporal's ${formatBytes(PAYLOAD_WARN_BYTES)} ` +
          `warning threshold for one payload (${describeParts(parts)}); every run's history holds it`,
      },
    };
  }
  return { bytes: size.bytes };
}

/** The size of the plan's own data, before compiling: lets a too-big plan be reported with its other problems. */
export function rawPlanSizeProblem(raw: unknown): PlanIssue | undefined {
  const size = measureJson(raw, '', PART_BYTES);
  if (size.bytes <= MAX_START_PAYLOAD_BYTES) return undefined;
  return overLimit('the plan comes', size.bytes, size.parts.map((part) => ({ ...part, path: part.path.replace(/^\./, '') })));
}

/** A problem at the biggest part, naming the others. */
function overLimit(what: string, bytes: number, parts: SizePart[]): PlanIssue {
  return {
    path: parts[0]?.path ?? '',
    message:
      `${what} to ${formatBytes(bytes)} as JSON; Temporal takes at most ${formatBytes(PAYLOAD_LIMIT_BYTES)} to start a run ` +
      `(${describeParts(parts)}): keep large data in files and read them with fs.read`,
  };
}

function describeParts(parts: SizePart[]): string {
  if (parts.length === 0) return 'no single part stands out';
  const shown = parts.slice(0, PARTS_SHOWN).map((p) => `${p.path || 'the plan'}${p.rest ? ' (the rest of it)' : ''}: ${formatBytes(p.bytes)}`);
  return `biggest: ${shown.join('; ')}`;
}

/** Where a part of the compiled payload was written in the plan file. */
function planPath(compiled: string, inputLabel: (name: string) => string): string {
  const given = /^\.inputs\.([^.[]+)(.*)$/.exec(compiled);
  if (given) return `${inputLabel(given[1])}${given[2]}`;
  return compiled
    .replace(/^\.plan\.?/, '')
    .replace(/^(steps\[\d+\])\.action\.(with|ask|tool)/, '$1.$2')
    .replace(/^(steps\[\d+\])\.needs/, '$1.dependsOn');
}
