/** `tool:` steps: one call of a built-in tool or a worker's own (`ts:`, `mcp:`), its parameters in `with`; `sleep` is a timer. */
import { z } from 'zod';
import { planKind } from './kind';

/** A tool and its parameters, as a step or a compensation names them. */
export const toolCallFields = {
  tool: z.string().min(1),
  with: z.record(z.string(), z.unknown()).optional(),
};

export const toolKind = planKind({
  kind: 'tool',
  fields: toolCallFields,
  compile: (step) => ({ kind: 'tool', tool: step.tool, with: step.with ?? {} }),
  templated: ['with'],
  cost: (action) => (action.tool === 'sleep' ? { unit: 'timer' } : { unit: 'activity', params: action.with }),
  describe: (action) => action.tool,
});
