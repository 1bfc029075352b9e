/**
 * Two guards of the agent loop (workflows/agent/agent-loop.ts), pure so the workflow stays lean
 * and deterministic:
 *  - never a silent success: a final answer that is a tool call written as text (the model-turn
 *    activity says so in `unparsedToolCall`) gets one correction; the second fails the step with
 *    ToolCallNotParsed, naming the fix;
 *  - a `mustChange` step's answer before its change (the activity says so in `notChanged`) gets
 *    one correction; the second fails the step with AgentMadeNoChange;
 *  - loops that stop: a turn making the same tool calls (names and arguments) as the two before it
 *    gets a note saying so; a fourth such turn fails the step with AgentLoopDetected.
 * Both are non-retryable: running the agent again from the start would repeat the same thing.
 */
import { ApplicationFailure } from '@temporalio/workflow';
import type { ModelTurnResult, ToolCall as ModelToolCall } from '../providers/model-turn';
import { canonical } from './canonical-json';
import { noChangeCorrection, noChangeMessage } from './made-no-change';

export { canonical } from './canonical-json';

/** Identical turns in a row that earn the note; one more fails the step. */
export const REPEATS_BEFORE_NOTE = 3;

export class TurnGuards {
  private unparsed = 0;
  private noChange = 0;
  private lastCalls?: string;
  private repeats = 0;

  /**
   * A turn with no tool calls: the message to send the model instead of taking its text as the
   * answer, or undefined when it is an answer. Throws ToolCallNotParsed the second time.
   */
  answer(turn: Pick<ModelTurnResult, 'unparsedToolCall' | 'notChanged' | 'text'>): string | undefined {
    this.lastCalls = undefined;
    this.repeats = 0;
    if (turn.notChanged) {
      if (++this.noChange > 1) throw ApplicationFailure.nonRetryable(noChangeMessage(turn.text ?? '', turn.notChanged), 'AgentMadeNoChange');
      return noChangeCorrection(turn.notChanged);
    }
    const call = turn.unparsedToolCall;
    if (!call) return undefined;
    if (++this.unparsed > 1) {
      throw ApplicationFailure.nonRetryable(
        `the model wrote its call to ${call.tool} as text (${call.style} style) again after being told, and nothing read it as a tool call, so nothing ran: ${call.fix}`,
        'ToolCallNotParsed',
      );
    }
    return (
      `Your last answer looks like a call to ${call.tool} written as text. It was not run: nothing has been done yet. ` +
      'To use a tool, call it the way your instructions say tools are called. If the work is done, give your final answer in plain words, without a tool call.'
    );
  }

  /**
   * A turn's tool calls, before they run: the note to send after their results (the third
   * identical turn in a row), or undefined. Throws AgentLoopDetected on the fourth.
   */
  calls(calls: readonly Pick<ModelToolCall, 'name' | 'args'>[]): string | undefined {
    const key = canonical(calls.map((call) => [call.name, call.args]));
    this.repeats = key === this.lastCalls ? this.repeats + 1 : 1;
    this.lastCalls = key;
    const what = calls.length === 1 ? `${calls[0].name} with the same arguments` : `the same ${calls.length} tool calls`;
    if (this.repeats > REPEATS_BEFORE_NOTE) {
      throw ApplicationFailure.nonRetryable(`the agent called ${what} ${this.repeats} times in a row, after being told it was repeating itself`, 'AgentLoopDetected');
    }
    if (this.repeats < REPEATS_BEFORE_NOTE) return undefined;
    return (
      `You have now called ${what} ${REPEATS_BEFORE_NOTE} times in a row. Repeating it changes nothing. ` +
      'Do something different, or give your final answer. If you make the same call again, the step fails.'
    );
  }
}
