/**
 * A reply's events as the AI SDK's UI message stream (src/streaming/ui-message-stream.ts): the
 * chunks themselves, and what the SDK's own client (DefaultChatTransport, which checks every chunk
 * against its schema, and readUIMessageStream) makes of them: the message useChat would show.
 */
import { DefaultChatTransport, type UIMessage, readUIMessageStream } from 'ai';
import type { StreamEventAt } from '../../src/streaming/events';
import { type CadreDataTypes, type CadreUiChunk, UiMessageStream } from '../../src/streaming/ui-message-stream';

let offset = 0;
const ev = (e: Record<string, unknown> & { type: string }): StreamEventAt => ({ step: 'session', at: 0, offset: offset++, ...e }) as StreamEventAt;

function translate(events: StreamEventAt[], error?: string, messageId = 'reply-0'): CadreUiChunk[] {
  const ui = new UiMessageStream(messageId);
  return [...events.flatMap((e) => ui.push(e)), ...ui.finish(error)];
}

/** The chunks as SSE through the SDK's transport (schema-checked) into the message useChat builds. */
async function asMessage(chunks: CadreUiChunk[]): Promise<UIMessage<unknown, CadreDataTypes>> {
  const sse = [...chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`), 'data: [DONE]\n\n'].join('');
  const transport = new DefaultChatTransport({ fetch: async () => new Response(sse, { headers: { 'content-type': 'text/event-stream' } }) });
  const stream = await transport.sendMessages({ chatId: 'c', messages: [], trigger: 'submit-message', messageId: undefined, abortSignal: undefined });
  let last: UIMessage<unknown, CadreDataTypes> | undefined;
  const errors: unknown[] = [];
  for await (const message of readUIMessageStream<UIMessage<unknown, CadreDataTypes>>({ stream, onError: (e) => errors.push(e) })) last = message;
  if (errors.length > 0 && !chunks.some((c) => c.type === 'error')) throw errors[0];
  return last!;
}

const turn = (n: number, text: string[], finishReason = 'stop', toolCalls = 0) => [
  ev({ type: 'message_start', turn: n, attempt: 1, model: 'openai:gpt-4o-mini' }),
  ...text.map((t) => ev({ type: 'text_delta', turn: n, attempt: 1, text: t })),
  ...(toolCalls ? [ev({ type: 'tool_call', turn: n, attempt: 1, callId: 'call-1', tool: 'fs_read', args: { path: 'notes.txt' } })] : []),
  ev({ type: 'message_complete', turn: n, attempt: 1, finishReason, usage: { inputTokens: 1, outputTokens: 1 }, toolCalls }),
];

beforeEach(() => {
  offset = 0;
});

test('text and tool calls become steps, text parts and a dynamic tool part, in the order the protocol wants', async () => {
  const events = [
    ...turn(1, ['Let me ', 'read. '], 'tool-calls', 1),
    ev({ type: 'tool_result', turn: 1, callId: 'call-1', tool: 'fs.read', preview: '{"content":"the notes"}' }),
    ...turn(2, ['Done.']),
  ];
  const chunks = translate(events);
  expect(chunks).toEqual([
    { type: 'start', messageId: 'reply-0' },
    { type: 'start-step' },
    { type: 'text-start', id: 'text-1' },
    { type: 'text-delta', id: 'text-1', delta: 'Let me ' },
    { type: 'text-delta', id: 'text-1', delta: 'read. ' },
    { type: 'text-end', id: 'text-1' },
    { type: 'tool-input-available', toolCallId: 'call-1', toolName: 'fs_read', input: { path: 'notes.txt' }, dynamic: true },
    { type: 'finish-step' },
    { type: 'tool-output-available', toolCallId: 'call-1', output: { content: 'the notes' }, dynamic: true },
    { type: 'start-step' },
    { type: 'text-start', id: 'text-7' },
    { type: 'text-delta', id: 'text-7', delta: 'Done.' },
    { type: 'text-end', id: 'text-7' },
    { type: 'finish-step' },
    { type: 'finish', finishReason: 'stop' },
  ]);
  const message = await asMessage(chunks);
  expect(message.id).toBe('reply-0');
  expect(message.parts.map((p) => p.type)).toEqual(['step-start', 'text', 'dynamic-tool', 'step-start', 'text']);
  expect(message.parts.filter((p) => p.type === 'text').map((p) => p.text)).toEqual(['Let me read. ', 'Done.']);
  expect(message.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({ toolName: 'fs_read', toolCallId: 'call-1', state: 'output-available', input: { path: 'notes.txt' }, output: { content: 'the notes' } });
});

test('an approval is a data-approval part keyed by its wait; a failed tool, an error part of the tool', async () => {
  const events = [
    ...turn(1, [], 'tool-calls', 1),
    ev({ type: 'approval_requested', waitId: 'session/1/call-1', prompt: 'Allow fs.read?', choices: ['approve', 'always', 'deny'] }),
    ev({ type: 'tool_result', turn: 1, callId: 'call-1', tool: 'fs.read', isError: true, preview: 'denied: not now' }),
  ];
  const chunks = translate(events);
  expect(chunks).toContainEqual({ type: 'data-approval', id: 'session/1/call-1', data: { waitId: 'session/1/call-1', prompt: 'Allow fs.read?', choices: ['approve', 'always', 'deny'] } });
  const message = await asMessage(chunks);
  expect(message.parts.find((p) => p.type === 'data-approval')).toEqual({ type: 'data-approval', id: 'session/1/call-1', data: { waitId: 'session/1/call-1', prompt: 'Allow fs.read?', choices: ['approve', 'always', 'deny'] } });
  expect(message.parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({ state: 'output-error', errorText: 'denied: not now' });
});

test('read from mid-reply, the message is still well formed: a step and a text part are opened, a result gets its call', async () => {
  offset = 40;
  const midText = translate([ev({ type: 'text_delta', turn: 3, attempt: 1, text: 'rest of it' }), ev({ type: 'message_complete', turn: 3, attempt: 1, finishReason: 'stop', usage: { inputTokens: 1, outputTokens: 1 }, toolCalls: 0 })]);
  expect(midText.slice(0, 4)).toEqual([{ type: 'start', messageId: 'reply-0' }, { type: 'start-step' }, { type: 'text-start', id: 'text-40' }, { type: 'text-delta', id: 'text-40', delta: 'rest of it' }]);
  expect((await asMessage(midText)).parts.filter((p) => p.type === 'text').map((p) => p.text)).toEqual(['rest of it']);

  const midTool = translate([ev({ type: 'tool_result', turn: 1, callId: 'c9', tool: 'fs.read', preview: '{"cut', truncatedFrom: 90_000 })]);
  expect(midTool).toContainEqual({ type: 'tool-input-available', toolCallId: 'c9', toolName: 'fs.read', input: {}, dynamic: true });
  // A cut preview is not JSON: it stays text.
  expect((await asMessage(midTool)).parts.find((p) => p.type === 'dynamic-tool')).toMatchObject({ state: 'output-available', output: '{"cut' });
});

test('a retried turn closes the abandoned text and says so; model errors are data, a failed reply ends in an error', async () => {
  const events = [
    ev({ type: 'message_start', turn: 1, attempt: 1 }),
    ev({ type: 'text_delta', turn: 1, attempt: 1, text: 'half' }),
    ev({ type: 'error', turn: 1, attempt: 1, errorType: 'ModelStreamBroken', message: 'the stream broke', retryable: true }),
    ev({ type: 'message_start', turn: 1, attempt: 2 }),
    ev({ type: 'text_delta', turn: 1, attempt: 2, text: 'whole' }),
  ];
  const chunks = translate(events, 'session-1: the model refused');
  expect(chunks).toEqual([
    { type: 'start', messageId: 'reply-0' },
    { type: 'start-step' },
    { type: 'text-start', id: 'text-1' },
    { type: 'text-delta', id: 'text-1', delta: 'half' },
    { type: 'data-error', id: 'error-2', data: { errorType: 'ModelStreamBroken', message: 'the stream broke', retryable: true } },
    { type: 'text-end', id: 'text-1' },
    { type: 'finish-step' },
    { type: 'data-retry', id: 'retry-3', data: { turn: 1, attempt: 2 } },
    { type: 'start-step' },
    { type: 'text-start', id: 'text-4' },
    { type: 'text-delta', id: 'text-4', delta: 'whole' },
    { type: 'text-end', id: 'text-4' },
    { type: 'finish-step' },
    { type: 'error', errorText: 'session-1: the model refused' },
    { type: 'finish', finishReason: 'error' },
  ]);
  const message = await asMessage(chunks);
  expect(message.parts.map((p) => p.type)).toEqual(['step-start', 'text', 'data-error', 'data-retry', 'step-start', 'text']);
});

test('a reply whose stream could not be read goes whole, and run events add nothing', () => {
  const ui = new UiMessageStream();
  expect(ui.push(ev({ type: 'step_started', step: 'a', kind: 'echo' }))).toEqual([{ type: 'start' }]);
  expect(ui.push(ev({ type: 'run_completed', status: 'completed' }))).toEqual([]);
  expect(ui.whole('all of it')).toEqual([
    { type: 'start-step' },
    { type: 'text-start', id: 'text-whole' },
    { type: 'text-delta', id: 'text-whole', delta: 'all of it' },
    { type: 'text-end', id: 'text-whole' },
    { type: 'finish-step' },
  ]);
  expect(ui.finish()).toEqual([{ type: 'finish', finishReason: 'stop' }]);
});

test('a stream that stops showing text says so as a notice, and the reply then goes whole', async () => {
  const ui = new UiMessageStream('reply-9');
  const chunks = [
    ...ui.push(ev({ type: 'message_start', turn: 1, attempt: 1 })),
    ...ui.push(ev({ type: 'text_delta', turn: 1, attempt: 1, text: 'First' })),
    ...ui.push(ev({ type: 'stream_shed', reason: 'this workflow has used 5000 of Temporal\'s 10000 signals a run' })),
    ...ui.push(ev({ type: 'limits_warning', limit: 'signals', used: 8000, max: 10000, message: 'CadreLimits: 8000 of 10000' })),
  ];
  expect(ui.shed).toBe(true);
  const message = await asMessage([...chunks, ...ui.whole('First, then the rest.'), ...ui.finish()]);
  expect(message.parts.filter((p) => p.type === 'data-notice').map((p) => (p as { data: { kind: string } }).data.kind)).toEqual(['stream_shed', 'limits_warning']);
  expect(message.parts.filter((p) => p.type === 'text').map((p) => (p as { text: string }).text)).toEqual(['First', 'First, then the rest.']);
});
