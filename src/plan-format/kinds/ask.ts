/** `ask:` steps: a question for a person, answered by an update (`cadre answer`). */
import { z } from 'zod';
import { duration } from '../fields';
import { MAX_QUESTION_BYTES, utf8Length } from '../limits';
import { formatBytes } from '../text';
import { brief, planKind } from './kind';

export const askSchema = z.strictObject({
  question: z
    .string()
    .min(1)
    .refine((text) => utf8Length(text) <= MAX_QUESTION_BYTES, {
      error: (issue) => `the question is ${formatBytes(utf8Length(issue.input as string))}; a question holds at most ${formatBytes(MAX_QUESTION_BYTES)}: people read it`,
    }),
  choices: z.array(z.string().min(1)).min(1).optional(),
  timeout: duration.optional(),
});

export const askKind = planKind({
  kind: 'ask',
  fields: { ask: askSchema },
  compile: ({ ask }) => ({ kind: 'ask', ask }),
  templated: ['ask'],
  cost: (action) => ({ unit: 'ask', input: action.ask }),
  describe: (action) => `ask "${brief(action.ask.question, 80)}"`,
});
