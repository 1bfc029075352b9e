/**
 * A step whose task is a change (`mustChange`: any change, or each of the files it lists) that its
 * agent answered before making it: the model is told once (the agent loop in text modes; twice
 * under toolCalls: required, whose finish is sent back), then the step fails AgentMadeNoChange, its
 * answer kept in the message. Shared by the activity side (providers/required-turn.ts) and the
 * workflow side (agent-guards.ts).
 */

/** What a step's task must change: anything, or each of these files (relative to its workspace). */
export type MustChange = true | string[];
/** Files one step may list. */
export const MAX_MUST_CHANGE = 50;

/** `a.txt`, `a.txt and b.txt`, `a.txt, b.txt and c.txt`. */
export function listed(files: string[]): string {
  return files.length === 1 ? files[0] : `${files.slice(0, -1).join(', ')} and ${files.at(-1)}`;
}

/** What is still to change, in words: `files` is empty when nothing has changed at all. */
export function stillToChange(files: string[]): string {
  return files.length === 0 ? 'nothing has changed yet (no file written or edited, no command run)' : `${listed(files)} ${files.length === 1 ? 'has' : 'have'} not been written or changed yet`;
}

/** The correction a final answer before the change gets (text and native modes). */
export function noChangeCorrection(files: string[]): string {
  const what = files.length === 0 ? 'the change it asks for' : listed(files);
  return `Not finished: this task is done only when the workspace has changed, and ${stillToChange(files)}. Make ${what} with your tools, then give your final answer.`;
}

/** Characters of the model's answer the failure quotes; the rest is in the agent's conversation. */
const ANSWER_QUOTED = 500;

/** The failure's message, with the answer the model gave instead of the change. */
export function noChangeMessage(answer: string, files: string[]): string {
  const text = answer.trim();
  const quoted = text.length > ANSWER_QUOTED ? `${text.slice(0, ANSWER_QUOTED)}… (${text.length} characters)` : text;
  return (
    `the agent answered after being told the task is not done, and ${stillToChange(files)}; the step's task is a change (mustChange): ` +
    (quoted === '' ? 'its answer was empty' : `its answer was ${JSON.stringify(quoted)}`)
  );
}
