/**
 * A run's stream on the dev server (docs/streaming.md): an agent's text seen by a watcher while
 * the model is still sending it, every event type, resuming by offset with nothing missed or seen
 * twice, retried turns told apart by attempt, history growing by batches, and sessions' replies.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { modelSettings } from '../src/providers/config';
import { sendMessage, sessionInput } from '../src/client/sessions';
import { STREAM_EVENT_TYPES, type StreamEventAt } from '../src/streaming/events';
import { type FakeModelServer, startFakeModelServer } from './support/fake-model-server';
import { type Harness, compile, startPlan, tempWorkspace, uniqueId, withWorker } from './support/harness';

let server: FakeModelServer;
beforeAll(async () => {
  server = await startFakeModelServer();
});
afterAll(() => server.close());

function withModels<T>(fn: (h: Harness) => Promise<T>): Promise<T> {
  const models = modelSettings({}, { OPENAI_API_KEY: 'sk-test-streaming', OPENAI_BASE_URL: server.baseURL });
  return withWorker(fn, { activityDeps: { models } });
}

async function collect(h: Harness, id: string, from = 0, seen?: (e: StreamEventAt, at: number) => void): Promise<StreamEventAt[]> {
  const events: StreamEventAt[] = [];
  for await (const event of h.client.events(id, { from })) {
    seen?.(event, Date.now());
    events.push(event);
  }
  return events;
}

const words = (n: number, prefix = 'w') => Array.from({ length: n }, (_, i) => `${prefix}${i} `);

test('an agent\'s text is seen while the model is still sending it, and every event of the run is typed and in order', async () => {
  const ws = tempWorkspace();
  writeFileSync(path.join(ws, 'notes.txt'), 'the notes');
  const plan = compile(
    `name: streamed
steps:
  - { id: read, agent: { prompt: "read notes.txt", model: "openai:gpt-4o-mini", tools: [fs.read] } }
  - { id: after, dependsOn: [read], echo: { text: "done" } }
`,
    ws,
  );
  const chunks = words(30);
  server.enqueue(
    { text: 'Let me read it. ', toolCalls: [{ id: 'call-1', name: 'fs_read', args: { path: 'notes.txt' } }], usage: { inputTokens: 10, outputTokens: 5 } },
    { chunks, chunkDelayMs: 60, usage: { inputTokens: 20, outputTokens: 30 } },
  );
  await withModels(async (h) => {
    const id = await startPlan(h, plan);
    const firstSeen: number[] = [];
    const events = await collect(h, id, 0, (e, at) => {
      if (e.type === 'text_delta' && e.turn === 2) firstSeen.push(at);
    });
    const lastSent = server.chunkTimes.filter((c) => chunks.includes(c.text)).at(-1)?.at as number;
    // Seen before the model sent its last word: streamed, not delivered whole at the end.
    expect(firstSeen.length).toBeGreaterThan(1);
    expect(firstSeen[0]).toBeLessThan(lastSent - 500);

    const types = events.map((e) => e.type);
    expect(types[0]).toBe('step_started');
    expect(types.at(-1)).toBe('run_completed');
    expect(events.map((e) => e.offset)).toEqual(events.map((_, i) => events[0].offset + i));
    const text = events.filter((e) => e.type === 'text_delta' && e.turn === 2).map((e) => (e as { text: string }).text).join('');
    expect(text).toBe(chunks.join(''));
    const call = events.find((e) => e.type === 'tool_call');
    expect(call).toMatchObject({ step: 'read', turn: 1, attempt: 1, tool: 'fs_read', args: { path: 'notes.txt' } });
    expect(events.find((e) => e.type === 'tool_result')).toMatchObject({ step: 'read', turn: 1, tool: 'fs.read', preview: expect.stringContaining('the notes') });
    expect(events.filter((e) => e.type === 'message_complete').map((e) => (e as { usage: unknown }).usage)).toEqual([
      { inputTokens: 10, outputTokens: 5 },
      { inputTokens: 20, outputTokens: 30 },
    ]);
    expect(events.filter((e) => e.type === 'step_completed').map((e) => e.step)).toEqual(['read', 'after']);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', status: 'completed' });

    // Resuming from any offset gives exactly the rest: nothing missed, nothing twice.
    const middle = events[Math.floor(events.length / 2)].offset;
    const rest = await collect(h, id, middle);
    expect(rest).toEqual(events.filter((e) => e.offset >= middle));
  });
});

test('a session streams its reply, and the reply tells where its events end', async () => {
  const ws = tempWorkspace();
  const id = uniqueId('stream-session');
  const chunks = words(10, 's');
  server.enqueue({ chunks, chunkDelayMs: 20 });
  await withModels(async (h) => {
    const start = sessionInput({ model: 'openai:gpt-4o-mini', workspace: ws });
    const reply = await sendMessage(h.client, id, 'hello', start, { taskQueue: h.taskQueue });
    expect(reply.reply).toBe(chunks.join(''));
    const events: StreamEventAt[] = [];
    for await (const e of h.client.events(id, { until: (e) => e.offset + 1 >= (reply.offset as number) })) events.push(e);
    expect(events.filter((e) => e.type === 'text_delta').map((e) => (e as { text: string }).text).join('')).toBe(reply.reply);
    expect(events.at(-1)?.offset).toBe((reply.offset as number) - 1);
    expect(events.every((e) => e.step === 'session')).toBe(true);
  });
});

test('the schema lists every event type once', () => {
  expect(new Set(STREAM_EVENT_TYPES).size).toBe(12);
});
