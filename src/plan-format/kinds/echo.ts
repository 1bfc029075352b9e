/** `echo:` steps: the step's output is its value, templates resolved; no activity runs. */
import { z } from 'zod';
import { planKind } from './kind';

export const echoKind = planKind({
  kind: 'echo',
  fields: { echo: z.unknown() },
  compile: ({ echo }) => ({ kind: 'echo', echo }),
  templated: ['echo'],
  // No event (a stored value it quotes is read by a local activity); its output is in the result.
  cost: (action) => ({ unit: 'inline', value: action.echo }),
  describe: () => 'echo',
});
