/**
 * An agent's conversation kept outside history, so a model turn's input is what is new since the
 * last turn, not the whole conversation again (which made an agent's history grow with the square
 * of its turns). Each turn stores what it was sent as one segment in the run's blob store: its new
 * messages and a reference to the segment before, so a chain of small content-addressed files
 * holds the conversation, and the workflow keeps only the last reference. Activities only.
 */
import type { StoredRef } from '../plan-format/refs';
import { type BlobStore, readStored } from '../store/blobs';
import { ErrorTypes, permanent } from '../errors/application-failures';
import type { ModelMessageInput } from '../providers/model-turn';

/** One stored piece of a conversation: its messages follow those of `previous`. */
interface Segment {
  $chain: 1;
  previous: StoredRef | null;
  /** Messages in the whole chain up to here, to check a read against. */
  total: number;
  messages: ModelMessageInput[];
}

/** What a chained turn sends the model (the stored conversation, then `added`), and the reference to it all, stored. */
export async function chainedConversation(earlier: StoredRef | undefined, added: ModelMessageInput[], store: (() => Promise<BlobStore>) | undefined): Promise<{ sent: ModelMessageInput[]; conversation: StoredRef }> {
  if (!store) throw missing('the agent has no workspace to keep it in');
  let opened: BlobStore;
  try {
    opened = await store();
  } catch (err) {
    throw missing((err as Error).message);
  }
  const sent = await readConversation(earlier, added, opened);
  return { sent, conversation: await storeConversation(earlier, added, sent.length, opened) };
}

/** The conversation `earlier` holds, and then `added`: read back from the store, checked, in order. */
export async function readConversation(earlier: StoredRef | undefined, added: ModelMessageInput[], store: BlobStore): Promise<ModelMessageInput[]> {
  if (earlier === undefined) return added;
  // Newest first while walking back, so a long chain costs one pass and no recursion.
  const pieces: ModelMessageInput[][] = [added];
  let expected: number | undefined;
  for (let ref: StoredRef | null = earlier; ref !== null; ) {
    const segment = await readSegment(ref, store);
    if (expected !== undefined && segment.total !== expected) throw missing(`a stored piece holds ${segment.total} messages where ${expected} were expected`);
    pieces.push(segment.messages);
    expected = segment.total - segment.messages.length;
    ref = segment.previous;
  }
  if (expected !== 0) throw missing(`the stored conversation ends ${expected} messages short`);
  return pieces.reverse().flat();
}

/** Stores `added` after `earlier`: the reference to give the next turn. A retried turn stores the same file. */
export async function storeConversation(earlier: StoredRef | undefined, added: ModelMessageInput[], total: number, store: BlobStore): Promise<StoredRef> {
  const segment: Segment = { $chain: 1, previous: earlier ?? null, total, messages: added };
  return store.put(segment);
}

async function readSegment(ref: StoredRef, store: BlobStore): Promise<Segment> {
  let value: unknown;
  try {
    value = await readStored(ref, [store.dir]);
  } catch (err) {
    throw missing((err as Error).message);
  }
  const segment = value as Partial<Segment> | null;
  if (segment?.$chain !== 1 || !Array.isArray(segment.messages) || typeof segment.total !== 'number') throw missing(`${ref.sha256} is not a piece of a conversation`);
  return segment as Segment;
}

/** The workflow sends the whole conversation again on this failure: nothing is lost but the one attempt. */
function missing(why: string) {
  return permanent(ErrorTypes.ConversationMissing, `the conversation so far cannot be read from the run's store (${why}): send it whole`);
}
