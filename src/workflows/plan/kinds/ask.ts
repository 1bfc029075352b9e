/** `ask:` steps: a question to a person, answered by the `answer` update (or signal). */
import { MAX_QUESTION_BYTES } from '../../../plan-format/limits';
import { resolveTemplates } from '../../../plan-format/templates';
import type { AskSpec } from '../../../plan-format/types';
import { StepTimeout } from '../../common/failures';
import type { StepKind } from './kind';

export const askKind: StepKind = {
  kind: 'ask',
  // A person may take a day: an ask waits without limit unless the step sets a timeout.
  unbounded: true,
  async run(run, step, scope, timeout) {
    const ask = (step.action as { ask: AskSpec }).ask;
    const text = run.asText(resolveTemplates(ask.question, scope, run.templates), MAX_QUESTION_BYTES, 'question', String);
    const question = typeof text === 'string' ? text : await text;
    run.record(step.id).attempts += 1;
    const answer = await run.waitForHuman(step.id, 'ask', question, ask.choices, timeout);
    if (answer === undefined) throw new StepTimeout(`no answer within ${timeout}`);
    return { output: answer, attempt: 0 };
  },
};
