/** `tool: sleep` steps: a durable timer, no activity. */
import { MAX_QUESTION_BYTES } from '../../../plan-format/limits';
import { hasDeferred } from '../../../plan-format/refs';
import { resolveTemplates } from '../../../plan-format/templates';
import type { ToolCall } from '../../../plan-format/types';
import { DEFAULT_STEP_TIMEOUT } from '../step-options';
import { durableSleep } from '../tool-call';
import type { StepKind } from './kind';

export const sleepKind: StepKind = {
  kind: 'sleep',
  chunked: true,
  async run(run, step, scope, timeout) {
    const params = resolveTemplates((step.action as ToolCall).with, scope, run.templates) as Record<string, unknown>;
    if (run.hardened && hasDeferred(params.duration)) params.duration = await run.resolveValue(params.duration, MAX_QUESTION_BYTES);
    // Asks and sleeps count their attempt when they start, so a record shows it while they wait.
    run.record(step.id).attempts += 1;
    return { output: await durableSleep(step.id, params.duration, timeout ?? DEFAULT_STEP_TIMEOUT), attempt: 0 };
  },
};
