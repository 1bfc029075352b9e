/** What a plan run does about a failed or timed-out step: the plan's strategy, or a person's answer. Workflow code. */
import type { CompiledStep } from '../../plan-format/types';
import { FAILURE_CHOICES, TIMEOUT_CHOICES, type WaitKind } from '../../protocol/definitions';
import type { StepError } from '../common/failures';

const MAX_AUTO_EXTENSIONS = 3;

export type Decision = 'retry' | 'skip' | 'abort' | 'extend';

type AskPerson = (id: string, kind: WaitKind, prompt: string, choices: string[]) => Promise<string | undefined>;

/** An aborting run decides nothing more; `extendBy` is the answer's new timeout (`extend:10m`). */
export async function decide(step: CompiledStep, failure: StepError, extensions: number, abortReason: string | undefined, ask: AskPerson): Promise<{ decision: Decision; extendBy?: string }> {
  if (abortReason) return { decision: 'abort' };
  const strategy = failure.timedOut ? step.onTimeout : step.onFailure;
  if (strategy === 'extend') return { decision: extensions < MAX_AUTO_EXTENSIONS ? 'extend' : 'abort' };
  // With `onFailure: retry` the activity already retried without limit; what reaches here is permanent.
  if (strategy === 'retry') return { decision: 'abort' };
  if (strategy !== 'ask') return { decision: strategy };
  const kind: WaitKind = failure.timedOut ? 'timeout' : 'failure';
  const choices = failure.timedOut ? TIMEOUT_CHOICES : FAILURE_CHOICES;
  const prompt = `Step "${step.id}" ${failure.timedOut ? 'timed out' : 'failed'}: ${failure.message}. ${choices.join(', ')}?`;
  const answer = await ask(step.id, kind, prompt, choices);
  const [decision, extra] = answer?.split(':') ?? [];
  return { decision: (decision as Decision | undefined) ?? 'abort', ...(extra && { extendBy: extra.trim() }) };
}
