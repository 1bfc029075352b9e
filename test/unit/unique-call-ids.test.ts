/** Tool calls of one turn with the same id (small models repeat them) get ids of their own, streamed or not. */
import type { LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { jsonSchema, streamText, tool } from 'ai';
import { MockLanguageModelV3, simulateReadableStream } from 'ai/test';
import { withUniqueCallIds } from '../../src/providers/unique-call-ids';

const call = (id: string, command: string): LanguageModelV3StreamPart[] => [
  { type: 'tool-input-start', id, toolName: 'shell' },
  { type: 'tool-input-delta', id, delta: JSON.stringify({ command }) },
  { type: 'tool-input-end', id },
];

test('a streamed turn whose two calls share an id: each call, and its input parts, get one id of its own', async () => {
  const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
  const chunks: LanguageModelV3StreamPart[] = [
    { type: 'stream-start', warnings: [] },
    ...call('dup', 'echo one'),
    ...call('dup', 'echo two'),
    // Both calls come at the end, as some providers send them.
    { type: 'tool-call', toolCallId: 'dup', toolName: 'shell', input: JSON.stringify({ command: 'echo one' }) },
    { type: 'tool-call', toolCallId: 'dup', toolName: 'shell', input: JSON.stringify({ command: 'echo two' }) },
    { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage },
  ] as LanguageModelV3StreamPart[];
  const model = new MockLanguageModelV3({ doStream: async () => ({ stream: simulateReadableStream({ chunks }) }) });
  const result = streamText({ model: withUniqueCallIds(model), prompt: 'go', tools: { shell: tool({ inputSchema: jsonSchema({ type: 'object' }) }) } });
  const calls: { id: string; input: unknown }[] = [];
  const starts: string[] = [];
  for await (const part of result.fullStream) {
    if (part.type === 'tool-call') calls.push({ id: part.toolCallId, input: part.input });
    if (part.type === 'tool-input-start') starts.push(part.id);
  }
  expect(starts).toEqual(['dup', 'dup-2']);
  expect(calls).toEqual([
    { id: 'dup', input: { command: 'echo one' } },
    { id: 'dup-2', input: { command: 'echo two' } },
  ]);
});
