/**
 * An agent's conversation kept as chained segments in the blob store (activities/conversation-chain.ts)
 * and the reference the loop keeps to it (protocol/stored-conversation.ts): what a turn sends, what it
 * reads back, and when it sends the whole conversation instead.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { chainedConversation, readConversation } from '../../src/activities/conversation-chain';
import type { ModelMessageInput } from '../../src/providers/model-turn';
import { StoredConversation } from '../../src/protocol/stored-conversation';
import { BlobStore } from '../../src/store/blobs';

const user = (content: string): ModelMessageInput => ({ role: 'user', content });
const assistant = (content: string): ModelMessageInput => ({ role: 'assistant', content });

async function freshStore(): Promise<BlobStore> {
  return BlobStore.open(mkdtempSync(path.join(os.tmpdir(), 'cadre-chain-')));
}

/** What each turn of a loop sends and the activity reads, turn after turn, as the agent loop does it. */
async function converse(store: BlobStore, conversation: StoredConversation, messages: ModelMessageInput[]) {
  const sent = conversation.next(messages)!;
  const { sent: read, conversation: ref } = await chainedConversation(sent.earlier, sent.messages, async () => store);
  conversation.stored(ref);
  return { sent, read };
}

describe('an agent conversation, chained in the blob store', () => {
  test('each turn sends only the messages since the last, and the activity reads the whole conversation back in order', async () => {
    const store = await freshStore();
    const conversation = new StoredConversation();
    const messages = [user('task')];
    const sentSizes: number[] = [];
    for (let turn = 1; turn <= 6; turn++) {
      const { sent, read } = await converse(store, conversation, messages);
      expect(read).toEqual(messages);
      sentSizes.push(sent.messages.length);
      expect(sent.earlier === undefined).toBe(turn === 1);
      messages.push(assistant(`answer ${turn}`), user(`result ${turn}`));
    }
    expect(sentSizes).toEqual([1, 2, 2, 2, 2, 2]);
  });

  test('a conversation that no longer starts as stored (a session dropped its oldest messages) is sent whole', async () => {
    const store = await freshStore();
    const conversation = new StoredConversation();
    const messages = [user('one'), assistant('two'), user('three')];
    await converse(store, conversation, messages);
    messages.push(assistant('four'), user('five'));
    messages.splice(0, 2);
    const { sent, read } = await converse(store, conversation, messages);
    expect(sent).toEqual({ messages });
    expect(read).toEqual([user('three'), assistant('four'), user('five')]);
    // Equal messages that are not the ones stored are another conversation: sent whole as well.
    const retold = messages.map((m) => ({ ...m }));
    expect(conversation.next(retold)).toEqual({ messages: retold });
  });

  test('a missing, changed or foreign segment fails the turn with ConversationMissing, and the next is sent whole', async () => {
    const store = await freshStore();
    const conversation = new StoredConversation();
    const messages = [user('task'), assistant('a'), user('b')];
    await converse(store, conversation, messages);
    messages.push(assistant('c'));
    const sent = conversation.next(messages)!;
    const failure = (err: unknown) => ({ type: (err as ApplicationFailure).type, nonRetryable: (err as ApplicationFailure).nonRetryable });

    const file = path.join(store.dir, `${sent.earlier!.sha256}.json`);
    // Changed on disk, read as another worker would (this one's cache holds it only for its own store).
    writeFileSync(file, '{"$chain":1}');
    await expect(readConversation({ ...sent.earlier!, store: '/elsewhere' }, [], store).catch(failure)).resolves.toEqual({ type: 'ConversationMissing', nonRetryable: true });
    rmSync(file);
    const other = await freshStore();
    await expect(readConversation(sent.earlier, [], other).catch(failure)).resolves.toEqual({ type: 'ConversationMissing', nonRetryable: true });
    // No store at all: the agent stops chaining.
    await expect(chainedConversation(undefined, messages, undefined).catch(failure)).resolves.toEqual({ type: 'ConversationMissing', nonRetryable: true });

    conversation.missing();
    expect(conversation.next(messages)).toEqual({ messages });
    conversation.missing();
    expect(conversation.next(messages)).toBeUndefined();
  });

  test('a segment that claims another count of messages than its chain holds is refused', async () => {
    const store = await freshStore();
    const first = await store.put({ $chain: 1, previous: null, total: 1, messages: [user('one')] });
    const lying = await store.put({ $chain: 1, previous: first, total: 5, messages: [assistant('two')] });
    await expect(readConversation(lying, [], store)).rejects.toThrow(/ends 3 messages short|expected/);
    const honest = await store.put({ $chain: 1, previous: first, total: 2, messages: [assistant('two')] });
    await expect(readConversation(honest, [user('three')], store)).resolves.toEqual([user('one'), assistant('two'), user('three')]);
  });
});
