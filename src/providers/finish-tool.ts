/**
 * The `finish` tool of `toolCalls: required`: with every reply a tool call, calling it is how the
 * model answers. Its arguments are the answer: the step's output schema when it is an object, else
 * `{ answer }` (a string, or the output schema's value), and `done`, which lets a model that could
 * not do the task say so rather than answer as if it had (OpenHands' finish asks the same).
 */
export const FINISH_TOOL = 'finish';

/** finish's own field: false fails the step (AgentGaveUp) instead of taking the answer as done work. */
const DONE_FIELD = 'done';
const DONE = { type: 'boolean', description: 'true when the task is done; false when you could not do it (then your answer says why)' };

export interface OfferedTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

/** The finish tool for a turn whose final answer must match `outputSchema` (any text when none). */
export function finishTool(outputSchema?: Record<string, unknown>): OfferedTool {
  const description = 'Call this once the task is done, or once you know you cannot do it: its arguments are your final answer. Until then, call the other tools to do the work.';
  if (outputSchema?.type === 'object') return { name: FINISH_TOOL, description, inputSchema: withDone(outputSchema) };
  const answer = outputSchema ?? { type: 'string', description: 'your final answer: what you did, or what was asked for' };
  return { name: FINISH_TOOL, description, inputSchema: { type: 'object', properties: { answer, [DONE_FIELD]: DONE }, required: ['answer', DONE_FIELD], additionalProperties: false } };
}

/** An object output schema with `done` after its own fields; one that has a `done` of its own is left as it is. */
function withDone(schema: Record<string, unknown>): Record<string, unknown> {
  if (!ownsDone(schema)) return schema;
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  const required = Array.isArray(schema.required) ? (schema.required as unknown[]) : [];
  return { ...schema, properties: { ...properties, [DONE_FIELD]: DONE }, required: [...required, DONE_FIELD] };
}

/** Whether finish adds its `done` to this object schema (not when the step's output has a field of that name). */
function ownsDone(schema: Record<string, unknown>): boolean {
  const properties = schema.properties;
  return !(properties !== null && typeof properties === 'object' && Object.hasOwn(properties, DONE_FIELD));
}

/**
 * The answer a `finish` call gives: the text of the turn and, with an output schema, its value
 * (without finish's `done`); `gaveUp` when the model said it could not do the task.
 */
export function finishAnswer(args: Record<string, unknown>, outputSchema?: Record<string, unknown>): { text: string; output?: unknown; gaveUp?: true } {
  const object = outputSchema?.type === 'object';
  const flagged = !object || ownsDone(outputSchema);
  const gaveUp = flagged && args[DONE_FIELD] === false ? { gaveUp: true as const } : {};
  if (object) {
    const output = flagged ? Object.fromEntries(Object.entries(args).filter(([key]) => key !== DONE_FIELD)) : args;
    return { text: JSON.stringify(output), output, ...gaveUp };
  }
  const answer = args.answer;
  const text = typeof answer === 'string' ? answer : JSON.stringify(answer);
  return { text, ...(outputSchema && { output: answer }), ...gaveUp };
}
