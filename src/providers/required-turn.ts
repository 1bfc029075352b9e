/**
 * A turn of `toolCalls: required` (model-turn.ts asks for it): its one call, or the answer when the
 * call is `finish`, after the guards that keep a small model moving (required-guards.ts).
 */
import { ErrorTypes, permanent } from '../errors/application-failures';
import { FINISH_TOOL, finishAnswer } from './finish-tool';
import { type Call, type Message, finishTooSoon, notChanged, repeated } from './required-guards';
import { type MustChange, noChangeMessage } from '../protocol/made-no-change';

/** What a turn returns (model-turn.ts's ModelTurnResult, whose module imports this one). */
interface Turn {
  text?: string;
  output?: unknown;
  toolCalls: Call[];
  finishReason: string;
  usage: { inputTokens: number; outputTokens: number };
}

/** How a turn of `toolCalls: required` works, said first in its system prompt: a small model does not guess it from the tools alone. */
export const REQUIRED_GUIDE =
  'You work through tools: every reply of yours is one tool call. Do the task with the tools, one step at a time: ' +
  'read what you need, then make the change the task asks for (write or edit the files, run the commands). Reading a file does not change it. ' +
  'When the task is done, call finish with your answer.';

interface Context {
  outputSchema?: Record<string, unknown>;
  /** `provider:model`, for messages. */
  label: string;
  /** The endpoint's base URL, named when the server ignores what was asked. */
  server?: string;
  request: { messages: Message[]; tools?: { name: string }[] };
  /** What the step's task changes: a finish before it fails AgentMadeNoChange once sent back twice. */
  mustChange?: MustChange;
}

/**
 * The reply's first call (a server that honours required sends nothing else); a call the guards
 * send back goes to the model unrun with the reason, as does a `finish` whose arguments do not
 * match. A reply with no call means the server honoured neither of required's constraints.
 */
export function requiredTurn(calls: Call[], result: Omit<Turn, 'toolCalls' | 'output'> & { text: string }, context: Context, listener?: { textDelta(text: string): void }): Turn {
  const { finishReason, usage } = result;
  const { messages } = context.request;
  const call = calls[0];
  if (!call) {
    if (finishReason === 'length') {
      const said = result.text.trim() === '' ? '' : ` It said: ${JSON.stringify(clip(result.text.trim()))}`;
      throw permanent(ErrorTypes.ModelOutputCut, `${context.label}: the reply reached its maxOutputTokens before its tool call ended: raise maxOutputTokens for the endpoint, or ask for less at once.${said}`);
    }
    throw permanent(
      ErrorTypes.ToolChoiceIgnored,
      `${context.label}: asked for a tool call (toolCalls: required), the server${context.server ? ` at ${context.server}` : ''} answered in words instead: it ignores tool_choice "required" ` +
        `(llama.cpp needs --jinja; Ollama does not honour it): set another toolCalls mode for the endpoint (cadre models test says which works). It said: ${JSON.stringify(clip(result.text.trim()))}`,
    );
  }
  // The call's thought (required's schema asks for one first) is the turn's text.
  const said = result.text.trim() === '' ? {} : { text: result.text };
  const sentBack = (error: string): Turn => ({ ...said, toolCalls: [{ ...call, error }], finishReason, usage });
  const again = call.error === undefined ? repeated(call, messages) : undefined;
  if (again !== undefined) return sentBack(again);
  if (call.name !== FINISH_TOOL || call.error !== undefined) return { ...said, toolCalls: [call], finishReason, usage };
  const tooSoon = finishTooSoon(messages, (context.request.tools ?? []).map((t) => t.name), context.mustChange);
  if (tooSoon !== undefined) return sentBack(tooSoon);
  const answer = finishAnswer(call.args, context.outputSchema);
  const missing = context.mustChange && notChanged(messages, context.mustChange);
  if (missing) throw permanent(ErrorTypes.AgentMadeNoChange, noChangeMessage(answer.text, missing));
  listener?.textDelta(answer.text);
  return { text: answer.text, ...(answer.output !== undefined && { output: answer.output }), toolCalls: [], finishReason: 'stop', usage };
}

/** Whether the model's last call was sent back unrun by a guard: greedy, it says the same again. */
export function sentBack(messages: Message[]): boolean {
  const last = messages.filter((m) => m.role === 'assistant').at(-1);
  return last?.toolCalls?.some((c) => c.error !== undefined && /^not (run|finished):/.test(c.error)) ?? false;
}

function clip(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}
