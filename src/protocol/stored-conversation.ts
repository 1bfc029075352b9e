/**
 * An agent's conversation as its model activity stored it (activities/conversation-chain.ts): the
 * loop keeps the reference the last turn returned, and the next turn sends only the messages
 * since, so the agent's history grows with its turns, not with their square. Whenever what was
 * stored is no longer how the conversation starts (a session that dropped its oldest messages, a
 * summary asked on other messages), or the store cannot give it back, the turn sends it whole.
 * Pure, for the agent loop (workflows/agent/agent-loop.ts).
 */
import type { StoredRef } from '../plan-format/refs';
import type { ModelMessageInput } from '../providers/model-turn';

/** What a chained turn sends: the messages since `earlier`, or all of them when there is no `earlier`. */
export interface ChainedMessages {
  earlier?: StoredRef;
  messages: ModelMessageInput[];
}

export class StoredConversation {
  /** The last turn's reference, and the messages it stands for (the same objects as the loop's). */
  private last?: { ref: StoredRef; sent: readonly ModelMessageInput[] };
  private pending?: { earlier?: StoredRef; sent: readonly ModelMessageInput[] };
  /** The activity could not even store the conversation (no store on its host): plain turns from now on. */
  private off = false;

  /** What the next turn sends for `messages`; undefined: a plain turn, with them all. */
  next(messages: readonly ModelMessageInput[]): ChainedMessages | undefined {
    if (this.off) return undefined;
    const last = this.last;
    const goesOn = last !== undefined && last.sent.length <= messages.length && last.sent.every((message, i) => messages[i] === message);
    this.pending = { ...(goesOn && { earlier: last.ref }), sent: messages.slice() };
    return goesOn ? { earlier: last.ref, messages: messages.slice(last.sent.length) } : { messages: messages.slice() };
  }

  /** The turn went through: the next one goes on from `ref`. */
  stored(ref: StoredRef | undefined): void {
    this.last = ref && this.pending && { ref, sent: this.pending.sent };
    this.pending = undefined;
  }

  /** The store could not give back (or keep) the conversation: the turn is asked again with all of it. */
  missing(): void {
    if (this.pending?.earlier === undefined) this.off = true;
    this.last = undefined;
    this.pending = undefined;
  }
}
