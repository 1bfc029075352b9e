/**
 * The session benchmark's yardstick: the least a Temporal workflow can do to hold a conversation.
 * One run, an update per message, one `modelTurn` activity per message with the last messages as
 * context, no tools, no summaries, no continue-as-new. Workflow code.
 */
import { condition, defineSignal, defineUpdate, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities, ModelMessageInput } from '../src/activities';

export const sayUpdate = defineUpdate<string, [string]>('say');
export const stopSignal = defineSignal('stop');
const KEEP = 50;

export async function baselineSession(model: string): Promise<number> {
  const { modelTurn } = proxyActivities<Activities>({ startToCloseTimeout: '5m', heartbeatTimeout: '10s', retry: { maximumAttempts: 8 } });
  const messages: ModelMessageInput[] = [];
  let answered = 0;
  let stopped = false;
  setHandler(sayUpdate, async (text) => {
    messages.push({ role: 'user', content: text });
    const turn = await modelTurn({ model, messages: messages.slice(-KEEP) });
    messages.push({ role: 'assistant', content: turn.text ?? '' });
    if (messages.length > KEEP) messages.splice(0, messages.length - KEEP);
    answered++;
    return turn.text ?? '';
  });
  setHandler(stopSignal, () => {
    stopped = true;
  });
  await condition(() => stopped);
  return answered;
}
