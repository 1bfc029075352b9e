/** A session's fork holds its first N exchanges: where they end, and when a fork cannot hold them whole. */
import { firstMessages } from '../../src/client/session-fork';
import type { SessionState } from '../../src/protocol/session';

const state = (more: Partial<SessionState> = {}): SessionState => ({
  messages: [
    { role: 'user', content: 'one' },
    { role: 'assistant', content: 'reply one' },
    { role: 'user', content: 'two' },
    { role: 'assistant', toolCalls: [{ id: 'c', name: 'fs_read', args: { path: 'a' } }] },
    { role: 'tool', toolCallId: 'c', toolName: 'fs_read', result: 'x' },
    // A correction the agent loop added inside the second exchange: not a message a person sent.
    { role: 'user', content: 'Your last answer looks like a call written as text.' },
    { role: 'assistant', content: 'reply two' },
    { role: 'user', content: 'three' },
    { role: 'assistant', content: 'reply three' },
  ],
  exchanges: [2, 7, 9],
  summarised: 0,
  dropped: 0,
  answered: 3,
  runs: 2,
  turns: 5,
  toolCalls: 1,
  usage: { inputTokens: 10, outputTokens: 5 },
  ...more,
});

test('the first N exchanges whole, tool calls and corrections inside them included; counts start again', () => {
  const forked = firstMessages(state(), 2, 's');
  expect(forked.messages).toHaveLength(7);
  expect(forked.messages.at(-1)).toEqual({ role: 'assistant', content: 'reply two' });
  expect(forked).toMatchObject({ answered: 2, exchanges: [2, 7], runs: 0, turns: 0, toolCalls: 0, usage: { inputTokens: 0, outputTokens: 0 } });
});

test('refused: more than it holds, a session that folded its earliest messages, one that never recorded where they end', () => {
  expect(() => firstMessages(state(), 4, 's')).toThrow('--at 4: s holds 3 messages with their replies');
  expect(() => firstMessages(state({ summarised: 4 }), 1, 's')).toThrow('s has folded its earliest messages into a summary (or dropped them)');
  expect(() => firstMessages(state({ exchanges: undefined }), 1, 's')).toThrow('s was started by a cadre that did not record where its messages end');
});
