/**
 * A run's stream on the dev server (docs/streaming.md): an agent's text seen by a watcher while
 * the model is still sending it, on the agent's own stream and read as one feed with the run's,
 * every event type, resuming by cursor with nothing missed or seen twice, retried turns told apart
 * by attempt, history growing by batches (the agent's, not the run's), and sessions' replies.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { modelSettings } from '../src/providers/config';
import { sendMessage, sessionInput } from '../src/client/sessions';
import { STREAM_EVENT_TYPES, type StreamEventAt } from '../src/streaming/events';
import { type FakeModelServer, startFakeModelServer } from './support/fake-model-server';
import { type Harness, compile, kill, startPlan, startWorkerProcess, tempWorkspace, uniqueId, waitUntil, withWorker } from './support/harness';
import { exited, spawnCadre, testServerEnv } from './support/cli';
import { CadreClient } from '../src/client/client';
import { STREAM_TOPIC, streamQuery } from '../src/protocol/stream';
import { WorkflowStreamClient } from '@temporalio/workflow-streams/client';
import { advance, startCursor } from '../src/streaming/reader';

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
    // The run's own stream says where the agent streams; the agent's events carry its workflow id.
    const started = events.find((e) => e.type === 'agent_started') as StreamEventAt & { workflowId: string };
    expect(started).toMatchObject({ step: 'read', kind: 'agent', workflowId: expect.stringContaining('/read') });
    const ofAgent = events.filter((e) => e.stream !== undefined);
    expect(ofAgent.length).toBeGreaterThan(5);
    expect(ofAgent.every((e) => e.stream === started.workflowId && e.step === 'read')).toBe(true);
    expect(events.indexOf(ofAgent[0])).toBeGreaterThan(events.indexOf(started));
    expect(ofAgent.at(-1)).toMatchObject({ type: 'agent_ended', status: 'completed' });
    expect(events.indexOf(ofAgent.at(-1) as StreamEventAt)).toBeLessThan(events.findIndex((e) => e.type === 'step_completed' && e.step === 'read'));
    // Each stream's offsets count on by one, every event once.
    const own = events.filter((e) => e.stream === undefined);
    expect(own.map((e) => e.offset)).toEqual(own.map((_, i) => own[0].offset + i));
    expect(ofAgent.map((e) => e.offset)).toEqual(ofAgent.map((_, i) => i));
    const text = events.filter((e) => e.type === 'text_delta' && e.turn === 2).map((e) => (e as { text: string }).text).join('');
    expect(text).toBe(chunks.join(''));
    const call = events.find((e) => e.type === 'tool_call');
    expect(call).toMatchObject({ step: 'read', turn: 1, attempt: 1, tool: 'fs_read', args: { path: 'notes.txt' } });
    expect(events.find((e) => e.type === 'tool_result')).toMatchObject({ step: 'read', turn: 1, attempt: 1, tool: 'fs.read', preview: expect.stringContaining('the notes') });
    expect(events.filter((e) => e.type === 'message_complete').map((e) => (e as { usage: unknown }).usage)).toEqual([
      { inputTokens: 10, outputTokens: 5 },
      { inputTokens: 20, outputTokens: 30 },
    ]);
    expect(events.filter((e) => e.type === 'step_completed').map((e) => e.step)).toEqual(['read', 'after']);
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', status: 'completed' });

    // Resuming from any point gives exactly the rest: nothing missed, nothing twice.
    for (const at of [1, Math.floor(events.length / 2), events.length - 2]) {
      const cursor = startCursor(0);
      for (const e of events.slice(0, at)) advance(cursor, e);
      const rest: StreamEventAt[] = [];
      for await (const e of h.client.events(id, { from: cursor })) rest.push(e);
      expect(rest).toEqual(events.slice(at));
    }
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

test('every event type appears: a question, a failed turn retried as attempt 2, an approval, a failed step', async () => {
  const ws = tempWorkspace();
  const plan = compile(
    `name: all-events
steps:
  - { id: confirm, ask: { question: "Go on?", choices: [yes, no] } }
  - { id: act, dependsOn: [confirm], agent: { prompt: "say hi", model: "openai:gpt-4o-mini", tools: [shell], approvals: { shell: ask } } }
  - { id: bad, dependsOn: [act], tool: shell, with: { command: "exit 3" }, retry: { maximumAttempts: 1 } }
`,
    ws,
  );
  server.enqueue(
    { status: 500, body: { error: { message: 'overloaded' } } },
    { text: 'Running it. ', toolCalls: [{ id: 'c1', name: 'shell', args: { command: 'echo hi' } }] },
    { chunks: ['All ', 'done.'] },
  );
  await withModels(async (h) => {
    const id = await startPlan(h, plan);
    const events: StreamEventAt[] = [];
    for await (const e of h.client.events(id)) {
      events.push(e);
      if (e.type === 'question_asked') await h.client.answer(id, e.waitId, 'yes');
      if (e.type === 'approval_requested') await h.client.answer(id, e.waitId, 'approve');
    }
    const types = new Set(events.map((e) => e.type));
    // A stream that sheds its text, and a run near Temporal's limits: test/run-limits.test.ts; a lost host: test/fleet.test.ts; a budget's warning and spend: test/budgets.test.ts.
    const elsewhere = new Set(['stream_shed', 'limits_warning', 'host_unreachable', 'budget_warning', 'budget_spent']);
    expect([...STREAM_EVENT_TYPES].filter((t) => !types.has(t) && !elsewhere.has(t))).toEqual([]);
    expect(new Set(STREAM_EVENT_TYPES).size).toBe(19);
    // The failed attempt and its retry are told apart: each starts with its own message_start.
    const turn1 = events.filter((e) => e.step === 'act' && e.turn === 1);
    expect(turn1.map((e) => [e.type, e.attempt])).toEqual(
      expect.arrayContaining([
        ['message_start', 1],
        ['error', 1],
        ['message_start', 2],
        ['message_complete', 2],
      ]),
    );
    expect(events.find((e) => e.type === 'error')).toMatchObject({ errorType: 'ModelUnavailable', retryable: true });
    expect(events.find((e) => e.type === 'tool_result')).toMatchObject({ tool: 'shell', preview: expect.stringContaining('hi') });
    expect(events.find((e) => e.type === 'step_failed')).toMatchObject({ step: 'bad' });
    expect(events.at(-1)).toMatchObject({ type: 'run_completed', status: 'failed' });
  });
});

test('a worker killed while the model streams: a second attempt, which readers tell apart, completes the turn', async () => {
  const ws = tempWorkspace();
  const plan = compile(`name: killed-stream\nsteps:\n  - { id: talk, agent: { prompt: "talk", model: "openai:gpt-4o-mini" } }\n`, ws);
  // The worker is killed once a reader has seen two of the first attempt's deltas: a reader runs
  // seconds behind on a loaded machine, so the first answer streams for 20 s (the kill ends it).
  const first = words(200, 'a');
  const second = words(5, 'b');
  server.enqueue({ chunks: first, chunkDelayMs: 100 }, { chunks: second });
  const taskQueue = uniqueId('killed-stream');
  const env = { OPENAI_API_KEY: 'sk-test-killed', OPENAI_BASE_URL: server.baseURL };
  const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
  let worker = await startWorkerProcess(taskQueue, env);
  try {
    const { workflowId } = await client.start(plan, {}, { workflowId: uniqueId('killed-stream'), taskQueue });
    const events: StreamEventAt[] = [];
    for await (const e of client.events(workflowId)) {
      events.push(e);
      if (e.type === 'text_delta' && e.attempt === 1 && worker.exitCode === null && events.filter((x) => x.type === 'text_delta').length === 2) {
        await kill(worker, 'SIGKILL');
        worker = await startWorkerProcess(taskQueue, env);
      }
    }
    const starts = events.filter((e) => e.type === 'message_start');
    expect(starts.map((e) => e.attempt)).toEqual([1, 2]);
    const textOf = (attempt: number) => events.filter((e) => e.type === 'text_delta' && e.attempt === attempt).map((e) => (e as { text: string }).text).join('');
    // The killed attempt's text is partial; the second attempt's is whole, and it is the answer.
    expect(first.join('').startsWith(textOf(1))).toBe(true);
    expect(textOf(1).length).toBeLessThan(first.join('').length);
    expect(textOf(2)).toBe(second.join(''));
    expect((await client.result(workflowId)).status).toBe('completed');
  } finally {
    await kill(worker, 'SIGTERM');
    await client.close();
  }
});

test('the log stays bounded: past 3,000 events the oldest go, and a reader from 0 starts at the oldest held', async () => {
  const ws = tempWorkspace();
  const plan = compile(`name: bounded\nsteps:\n  - { id: hold, ask: { question: "Stop?", choices: [yes] } }\n`, ws);
  await withModels(async (h) => {
    const id = await startPlan(h, plan);
    const handle = h.client.client.workflow.getHandle(id);
    // The run's own events (its step, its question) first, so that all the newest held are texts.
    await waitUntil(h, id, (d) => d.waiting.length > 0);
    // 3,500 events from outside, as activities publish them: 35 batches of 100.
    const publisher = WorkflowStreamClient.create(h.client.client, id);
    for (let i = 0; i < 3500; i++) {
      publisher.topic(STREAM_TOPIC).publish({ type: 'text_delta', step: 'outside', text: `t${i} `, at: Date.now() });
      if (i % 100 === 99) await publisher.flush();
    }
    await publisher[Symbol.asyncDispose]();
    const end = await handle.query<number>('__temporal_workflow_stream_offset');
    expect(end).toBeGreaterThanOrEqual(3500);
    const page = await handle.query(streamQuery, { from: 0 });
    // Trimmed to the newest 2,000 once past 3,000, and never more than 3,000 held.
    expect(end - page.base).toBeLessThanOrEqual(3000);
    expect(page.base).toBeGreaterThan(0);
    expect(page.events[0].offset).toBe(page.base);
    // The typed reader, with callbacks, from an offset long trimmed: it starts at the oldest held and ends with the run.
    let first: number | undefined;
    let texts = 0;
    let ended: string | undefined;
    const reading = h.client.followEvents(id, { onTextDelta: (e) => ((first ??= e.offset), texts++), onRunCompleted: (e) => (ended = e.status) }, { from: 10 });
    await h.client.answer(id, 'hold', 'yes');
    const next = await reading;
    expect(first).toBe(page.base);
    expect(texts).toBe(end - page.base);
    expect(ended).toBe('completed');
    expect(next).toEqual({ from: await handle.query<number>('__temporal_workflow_stream_offset'), streams: {} });
  });
});

test('cadre send prints the reply as it streams', async () => {
  const ws = tempWorkspace();
  const id = uniqueId('send-stream');
  const chunks = words(15, 'p');
  server.enqueue({ chunks, chunkDelayMs: 100 });
  await withModels(async (h) => {
    const child = spawnCadre(['send', id, 'hello'], ws, { ...testServerEnv(), CADRE_TASK_QUEUE: h.taskQueue, CADRE_MODEL: 'openai:gpt-4o-mini' });
    const seen: { text: string; at: number }[] = [];
    child.stdout!.on('data', (chunk: Buffer) => seen.push({ text: chunk.toString(), at: Date.now() }));
    expect(await exited(child)).toBe(0);
    expect(seen.map((s) => s.text).join('')).toBe(`${chunks.join('')}\n`);
    const lastSent = server.chunkTimes.filter((c) => chunks.includes(c.text)).at(-1)?.at as number;
    expect(seen.length).toBeGreaterThan(2);
    expect(seen[0].at).toBeLessThan(lastSent - 500);
  });
});

test('history grows by batches, not chunks; readers (queries) add nothing to it', async () => {
  const ws = tempWorkspace();
  const plan = compile(`name: batches\nsteps:\n  - { id: long, agent: { prompt: "write", model: "openai:gpt-4o-mini" } }\n`, ws);
  const chunks = words(600, 'x');
  // About 600 chunks a second, as a fast hosted model sends small tokens.
  server.enqueue({ chunks, chunkDelayMs: 0 });
  await withModels(async (h) => {
    const id = await startPlan(h, plan);
    const events = await collect(h, id);
    expect(events.filter((e) => e.type === 'text_delta').map((e) => (e as { text: string }).text).join('')).toBe(chunks.join(''));
    await h.client.client.workflow.getHandle(id).result();
    const agent = (events.find((e) => e.type === 'agent_started') as { workflowId: string }).workflowId;
    const publishesIn = (all: { workflowExecutionSignaledEventAttributes?: { signalName?: string | null } | null }[]) =>
      all.filter((e) => e.workflowExecutionSignaledEventAttributes?.signalName === '__temporal_workflow_stream_publish').length;
    const run = (await h.client.client.workflow.getHandle(id).fetchHistory()).events ?? [];
    const all = (await h.client.client.workflow.getHandle(agent).fetchHistory()).events ?? [];
    const publishes = publishesIn(all);
    console.log(`600 chunks: ${publishes} publish signals, ${all.length} events in the agent's history; ${publishesIn(run)} signals and ${run.length} events in the run's`);
    // The text goes to the agent's own workflow; the plan run takes none of it.
    expect(publishesIn(run)).toBe(0);
    expect(publishes).toBeGreaterThan(0);
    expect(publishes).toBeLessThanOrEqual(30);
    expect(all.length).toBeLessThan(150);
    // Readers poll by query: reads add no event (each read of an ended run replays it on the worker: a few suffice).
    for (let i = 0; i < 10; i++) await h.client.client.workflow.getHandle(agent).query(streamQuery, { from: i });
    expect((await h.client.client.workflow.getHandle(agent).fetchHistory()).events?.length).toBe(all.length);
  });
});
