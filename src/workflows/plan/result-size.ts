/** A run's result and failure within Temporal's payload limit. Workflow code. */
import { PAYLOAD_LIMIT_BYTES } from '../../plan-format/limits';
import type { Diagnostics } from '../../protocol/definitions';
import { sizeOf } from '../common/sizes';

/** Temporal refuses a run's result or failure over its payload limit; stay under it with room for the envelope. */
export const MAX_RESULT_BYTES = PAYLOAD_LIMIT_BYTES - 64 * 1024;

/** Diagnostics small enough to travel in a failure: a huge plan keeps only its unfinished and failed steps (runs before `hardened` kept all). */
export function fitForFailure(full: Diagnostics, hardened: boolean): Diagnostics {
  if (!hardened || sizeOf(full) <= MAX_RESULT_BYTES) return full;
  const kept = full.steps.filter((s) => s.status !== 'completed' && s.status !== 'skipped').slice(0, 200);
  return { ...full, steps: kept, errors: full.errors.slice(0, 200), note: `step records shortened to fit a failure; \`cadre status\` shows all ${full.steps.length}` };
}
