/**
 * The `finish` tool of `toolCalls: required`: with every reply a tool call, calling it is how the
 * model answers. Its arguments are the answer: the step's output schema when it is an object, else
 * `{ answer }` (a string, or the output schema's value).
 */
export const FINISH_TOOL = 'finish';

export interface OfferedTool {
  name: string;
  description?: string;
  inputSchema: Record<string, unknown>;
}

/** The finish tool for a turn whose final answer must match `outputSchema` (any text when none). */
export function finishTool(outputSchema?: Record<string, unknown>): OfferedTool {
  const description = 'Call this once the task is done, and only then: its arguments are your final answer. Until then, call the other tools to do the work.';
  if (outputSchema?.type === 'object') return { name: FINISH_TOOL, description, inputSchema: outputSchema };
  const answer = outputSchema ?? { type: 'string', description: 'your final answer: what you did, or what was asked for' };
  return { name: FINISH_TOOL, description, inputSchema: { type: 'object', properties: { answer }, required: ['answer'], additionalProperties: false } };
}

/** The answer a `finish` call gives: the text of the turn and, with an output schema, its value. */
export function finishAnswer(args: Record<string, unknown>, outputSchema?: Record<string, unknown>): { text: string; output?: unknown } {
  if (outputSchema?.type === 'object') return { text: JSON.stringify(args), output: args };
  const answer = args.answer;
  if (outputSchema) return { text: typeof answer === 'string' ? answer : JSON.stringify(answer), output: answer };
  return { text: typeof answer === 'string' ? answer : JSON.stringify(answer) };
}
