/** `echo:` steps: the step's output is its value, templates resolved; no activity runs. */
import { BLOB_THRESHOLD_BYTES } from '../../../plan-format/limits';
import { hasDeferred } from '../../../plan-format/refs';
import { resolveTemplates } from '../../../plan-format/templates';
import type { StepKind } from './kind';

export const echoKind: StepKind = {
  kind: 'echo',
  async run(run, step, scope) {
    const value = resolveTemplates((step.action as { echo: unknown }).echo, scope, run.templates);
    run.record(step.id).attempts += 1;
    // A stored output it quotes is read by a local activity (and stored again when big).
    const output = run.hardened && hasDeferred(value) ? await run.resolveValue(value, BLOB_THRESHOLD_BYTES) : value;
    return { output, attempt: 0 };
  },
};
