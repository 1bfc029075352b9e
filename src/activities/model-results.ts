/**
 * A model turn's result kept small enough for Temporal: an answer or tool-call arguments past
 * TURN_INLINE_BYTES go to the run's blob store and travel by reference, as tool outputs do (the
 * next turn and the tools read them back). Without a store to put them in, a turn too big for a
 * payload fails at once, for good, naming the limit and the size: retrying would pay for the same
 * answer again, and an activity result over gRPC's limit would only show as a heartbeat timeout.
 */
import type { BlobStore } from '../store/blobs';
import { externalize, jsonBytes } from '../store/values';
import { PAYLOAD_LIMIT_BYTES } from '../plan-format/limits';
import { ErrorTypes, permanent } from '../errors/application-failures';
import type { ModelTurnResult } from '../providers/model-turn';

/** A turn's result this big or smaller stays in history as it is. */
export const TURN_INLINE_BYTES = 64 * 1024;
/** What a turn's result may weigh in history when nothing can be stored: the payload limit, with room for the envelope. */
const TURN_MAX_BYTES = PAYLOAD_LIMIT_BYTES - 64 * 1024;

export async function keepTurnSmall(turn: ModelTurnResult, store: (() => Promise<BlobStore>) | undefined, model: string): Promise<ModelTurnResult> {
  const size = jsonBytes(turn);
  if (size <= TURN_INLINE_BYTES) return turn;
  if (!store) {
    if (size <= TURN_MAX_BYTES) return turn;
    throw permanent(ErrorTypes.TooLarge, `${model}: the answer is ${size} bytes, over the ${TURN_MAX_BYTES} a turn may bring back without a workspace to store it in (Temporal's payload limit); ask for less, or give the agent a workspace`);
  }
  // The answer's text, and each call's big arguments field by field (a path stays readable next to stored content).
  const small: ModelTurnResult = { ...turn };
  if (typeof turn.text === 'string' && Buffer.byteLength(turn.text) > TURN_INLINE_BYTES / 2) small.text = (await externalize(turn.text, store, 0)) as string;
  small.toolCalls = await Promise.all(turn.toolCalls.map(async (call) => (jsonBytes(call.args) > TURN_INLINE_BYTES / 4 ? { ...call, args: (await externalize(call.args, store, TURN_INLINE_BYTES / 4)) as typeof call.args } : call)));
  if (turn.output !== undefined && jsonBytes(turn.output) > TURN_INLINE_BYTES / 2) small.output = await externalize(turn.output, store, TURN_INLINE_BYTES / 2);
  return small;
}
