/**
 * Benchmark: a run's event stream (src/streaming, src/workflows/common/run-stream.ts) on a real dev
 * server and cadre worker, the model a fake OpenAI-compatible server streaming over HTTP
 * (test/support/fake-model-server.ts, compiled into dist/ through this import).
 *
 * 1. Latency, chunk → watcher: plan runs whose one agent step answers in CHUNKS unique chunks
 *    (`a1c123 `) at about 150 a second; a watcher (`client.events`) notes when it first sees each
 *    chunk's text; latency = seen − when the fake server wrote the chunk. p50/p90/p99/max over every
 *    chunk of every answer, target p99 ≤ 250 ms (reported, not enforced: on a shared 2-core machine
 *    the tail follows the machine's load, `loadAverage1m` in the report). Where the time goes, per
 *    chunk, from the run's history: the publisher's batch wait (write → the batch's `at`), the
 *    signal (→ its WorkflowExecutionSignaled), the wait for the run's workflow task (→ the
 *    WorkflowTaskStarted after it), that task (→ its WorkflowTaskCompleted), the watcher's poll (→ seen).
 * 2. History cost: the events (the run's and its agent child's) and `__temporal_workflow_stream_publish`
 *    signals a streamed answer adds, against the same run whose model sends the answer as one chunk.
 * 3. What a run can take (docs/streaming.md): AGENTS agents of one plan run stream at once for
 *    AGENT_SECONDS each while a stock Workflow Streams follower (this SDK's `subscribe`, the poll
 *    update Python's client uses) reads the run's stream and each agent's; events, signals and
 *    updates per agent-second of streaming at the run (target ≤ 2 events) and at each agent.
 * 4. Memory: the byte size of `WorkflowStream.getState()` (JSON) after 10,000 typical text_delta
 *    events, measured in a workflow on the dev server; the V8 heap (+ external) the same 10,000 log
 *    items take in a plain Node heap; and that a cadre run's log stays bounded: a session sent
 *    10,000 events through the stream's publish signal holds at most 3,000.
 *
 *   npm run bench        (TEMPORAL_ADDRESS=host:port to use an existing server)
 *   CADRE_STREAM_BATCH_MS=50 node dist/bench/streaming.js      (the publisher's batch interval; default 100)
 *   CADRE_BENCH_POLL_MS=20 node dist/bench/streaming.js        (the watcher's `pollMs`; default the reader's 50)
 *
 * Prints one JSON object and writes it to bench/results/streaming.json, and the distributions of
 * the latency and its parts to bench/results/streaming.svg; progress goes to stderr.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import { defaultPayloadConverter } from '@temporalio/common';
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { bundleWorkflowCode } from '@temporalio/worker';
import { WorkflowStreamClient } from '@temporalio/workflow-streams/client';
import { type PublishInput, decodePayloadWire, workflowStreamOffsetQuery } from '@temporalio/workflow-streams/workflow';
import YAML from 'yaml';
import { CadreClient } from '../src/client/client';
import { endSession, sendMessage, sessionInput } from '../src/client/sessions';
import { STREAM_PAGE_EVENTS, STREAM_TOPIC, streamQuery } from '../src/protocol/stream';
import { modelSettings } from '../src/providers/config';
import { formatIssues, validatePlan } from '../src/plan-format/validate';
import { batchInterval } from '../src/streaming/publisher';
import { resolveServer } from '../src/worker/dev-server';
import { registerSearchAttributes } from '../src/worker/embedded';
import { installConciseLogging } from '../src/worker/logging';
import { createCadreWorker } from '../src/worker/worker';
import { type FakeModelServer, startFakeModelServer } from '../test/support/fake-model-server';
import { followByPolls } from '../test/support/poll-follower';
import { distribution, writePlot } from './plot';
import { analyticsSettled, resultsFile, runMain, writeResults } from './run-main';
import { scaled } from './scale';

/** Measured answers (plan runs), each CHUNKS chunks CHUNK_DELAY_MS apart (~150 chunks/s with the write itself). */
const ANSWERS = scaled(5, 3);
const CHUNKS = 600;
const CHUNK_DELAY_MS = 5;
const WARMUP_CHUNKS = 150;
const TARGET_P99_MS = 250;
/** Events for the memory figures, and what run-stream.ts keeps: at most HIGH items, trimmed down to KEEP. */
const MEMORY_EVENTS = 10_000;
const HELD_LIMIT = 3000;
const PUBLISH_BATCH = 500;
const PUBLISH_SIGNAL = '__temporal_workflow_stream_publish';
const POLL_MS = Number(process.env.CADRE_BENCH_POLL_MS) > 0 ? Number(process.env.CADRE_BENCH_POLL_MS) : undefined;
const LOOP_SAMPLE_MS = 10;
/**
 * Agents streaming at once, and for how long each, for the run's limits. The run's events are a fixed
 * few an agent, so per agent-second they fall as agents stream longer: under 10 s an agent (6 s, to
 * save CI's time when CI ran this) they alone missed the target (3.07 events an agent-second at 6 s).
 */
const AGENTS = scaled(16, 4);
const AGENT_SECONDS = scaled(60, 10);
const TARGET_ROOT_EVENTS_PER_AGENT_SECOND = 2;
const RESULTS_FILE = resultsFile('streaming');

const EventType = temporal.api.enums.v1.EventType;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const benchStartMs = Date.now();
function log(line: string): void {
  process.stderr.write(`bench: ${((Date.now() - benchStartMs) / 1000).toFixed(1)}s ${line}\n`);
}

const round = (value: number, digits = 1) => Number(value.toFixed(digits));
/** Nearest-rank percentile of sorted values. */
const pct = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
const stats = (values: number[]) => {
  const s = [...values].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / Math.max(1, s.length);
  return { p50: round(pct(s, 50)), p90: round(pct(s, 90)), p99: round(pct(s, 99)), max: round(s.at(-1) ?? NaN), mean: round(mean) };
};

/** A typical streamed event as the publisher sends it: ~40 characters of text with its step, turn, attempt and time. */
const typicalEvent = (i: number, at: number) => ({ type: 'text_delta', text: `the model's answer goes on, part ${String(i).padStart(6, '0')} `, step: 'answer', turn: 1, attempt: 1, at: at + i });

/**
 * The workflow bundle: the benchmark's workflows (cadre's) plus a probe that fills a bare WorkflowStream
 * (no trimming) with `count` typical events and returns the size of its state. Written to a temporary
 * entry file so that nothing in the checkout changes.
 */
function workflowEntry(dir: string): string {
  const file = path.join(dir, 'streaming-bench-workflows.js');
  writeFileSync(
    file,
    `export * from ${JSON.stringify(require.resolve('./workflows'))};
import { WorkflowStream } from ${JSON.stringify(require.resolve('@temporalio/workflow-streams/workflow'))};
export async function streamStateProbe(count) {
  const stream = new WorkflowStream();
  const topic = stream.topic(${JSON.stringify(STREAM_TOPIC)});
  const at = Date.now();
  for (let i = 0; i < count; i++) topic.publish((${typicalEvent.toString()})(i, at));
  const state = stream.getState();
  return { items: state.log.length, stateBytes: JSON.stringify(state).length, itemDataChars: state.log.reduce((n, item) => n + item.data.length, 0) };
}
`,
  );
  return file;
}

/** The V8 heap (and external memory: payload bytes) that MEMORY_EVENTS log items take, built as WorkflowStream.publish builds them. */
function heapOfLog(count: number) {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const used = () => {
    gc();
    gc();
    const m = process.memoryUsage();
    return { heap: m.heapUsed, external: m.external };
  };
  const before = used();
  const at = Date.now();
  const items: { topic: string; payload: unknown }[] = [];
  for (let i = 0; i < count; i++) items.push({ topic: STREAM_TOPIC, payload: defaultPayloadConverter.toPayload(typicalEvent(i, at)) });
  const after = used();
  const heap = after.heap - before.heap;
  const external = after.external - before.external;
  return { items: items.length, heapBytes: heap, externalBytes: external, totalBytes: heap + external, bytesPerEvent: round((heap + external) / items.length) };
}

async function startWorker(tmp: string, fake: FakeModelServer) {
  log('starting the Temporal server...');
  const server = await resolveServer({ dataDir: path.join(tmp, 'server'), ephemeral: true, log });
  try {
    await registerSearchAttributes(server, log);
    log('bundling workflows...');
    const quiet = { trace() {}, debug() {}, info() {}, warn: log, error: log, log() {} };
    // The entry lives in a temporary directory: the packages it and the bundler's own entry import are this checkout's.
    const nodeModules = path.resolve(require.resolve('@temporalio/workflow/package.json'), '..', '..', '..');
    const { code } = await bundleWorkflowCode({
      workflowsPath: workflowEntry(tmp),
      logger: quiet,
      webpackConfigHook: (config) => ({ ...config, resolve: { ...config.resolve, modules: [...(config.resolve?.modules ?? ['node_modules']), nodeModules] } }),
    });
    const taskQueue = `bench-streaming-${process.pid}`;
    const models = modelSettings({}, { OPENAI_API_KEY: 'sk-bench-streaming', OPENAI_BASE_URL: fake.baseURL });
    const { worker, connection } = await createCadreWorker({
      address: server.address,
      namespace: server.namespace,
      taskQueue,
      workflowBundle: { code },
      auditDir: path.join(tmp, 'audit'),
      activityDeps: { models },
    });
    const client = await CadreClient.connect({ address: server.address, namespace: server.namespace });
    return { server, worker, client, taskQueue, connection };
  } catch (err) {
    await server.stop();
    throw err;
  }
}

/** The chunk tokens (`a1c123 `) in a text, in order. */
const TOKEN = /\S+ /g;

interface AnswerResult {
  chunks: number;
  chunksPerSecond: number;
  latencies: number[];
  parts: { batchWait: number[]; signal: number[]; taskQueue: number[]; taskRun: number[]; poll: number[] };
  /** The same parts for the chunks that took longer than the target. */
  slow: { latency: number; batchWait: number; signal: number; taskQueue: number; taskRun: number; poll: number }[];
  /** The first chunk's wait in the publisher. */
  firstBatchWait: number;
  chunksPerBatch: number[];
  runEvents: number;
  /** The run's child workflows (the agent step's) and their events. */
  children: number;
  childEvents: number;
  signals: number;
  textDeltas: number;
  wallMs: number;
}

async function main(): Promise<void> {
  installConciseLogging('WARN');
  const t0 = performance.now();
  const load0 = os.loadavg()[0];
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'cadre-bench-streaming-'));
  log(`heap of ${MEMORY_EVENTS} log items in this process...`);
  const heap = heapOfLog(MEMORY_EVENTS);
  // Replies nobody scripted (the session's first message) are a short text.
  const fake = await startFakeModelServer({ respond: () => ({ text: 'ok', usage: { inputTokens: 5, outputTokens: 1 } }) });
  const plan = (() => {
    const yaml = 'name: streaming\nsteps:\n  - { id: answer, agent: { prompt: "answer at length", model: "openai:gpt-4o-mini" } }\n';
    const result = validatePlan(YAML.parse(yaml), { baseDir: tmp });
    if (!result.ok) throw new Error(formatIssues(result.issues));
    return result.plan;
  })();
  const { server, worker, client, taskQueue, connection } = await startWorker(tmp, fake);
  const loopDelay = monitorEventLoopDelay({ resolution: LOOP_SAMPLE_MS });
  try {
    const histories = async (workflowId: string) => {
      const events = (await client.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
      const children = events.flatMap((e) => e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId ?? []);
      const childEvents = await Promise.all(children.map(async (id) => (await client.client.workflow.getHandle(id).fetchHistory()).events ?? []));
      return { events, children: children.length, childEvents: childEvents.flat() };
    };

    /** One plan run whose agent answers in `chunks`; the watcher notes when it first sees each chunk. */
    const answer = async (name: string, chunks: string[], chunkDelayMs: number, watch: boolean): Promise<AnswerResult> => {
      const started = performance.now();
      fake.enqueue({ chunks, chunkDelayMs, usage: { inputTokens: 20, outputTokens: chunks.length } });
      const { workflowId } = await client.start(plan, {}, { workflowId: `bench-streaming-${name}-${process.pid}`, taskQueue });
      const seen = new Map<string, { seenAt: number; publishedAt: number }>();
      let textDeltas = 0;
      if (watch) {
        let text = '';
        let scanned = 0;
        for await (const event of client.events(workflowId, { from: 0, ...(POLL_MS && { pollMs: POLL_MS }) })) {
          const now = Date.now();
          if (event.type !== 'text_delta') continue;
          textDeltas++;
          text += event.text;
          TOKEN.lastIndex = scanned;
          for (let m = TOKEN.exec(text); m; m = TOKEN.exec(text)) {
            if (!seen.has(m[0])) seen.set(m[0], { seenAt: now, publishedAt: event.at });
            scanned = TOKEN.lastIndex;
          }
        }
      }
      const result = await client.client.workflow.getHandle(workflowId).result();
      const wallMs = performance.now() - started;
      const { status } = result as { status?: string };
      if (status !== undefined && status !== 'completed') throw new Error(`${name} run ended ${status}`);
      const { events, children, childEvents } = await histories(workflowId);

      // Each publish signal: when the server recorded it, the workflow task that applied it, the chunks it carried.
      const signalOf = new Map<string, { signaledMs: number; taskStartMs: number; taskDoneMs: number }>();
      const chunksPerBatch: number[] = [];
      let pending: { signaledMs: number; taskStartMs: number; taskDoneMs: number }[] = [];
      let inTask: typeof pending = [];
      let signals = 0;
      // The text goes to the agent's own workflow (its stream), so its signals are in the agent's history.
      for (const event of childEvents as HistoryEvent[]) {
        const attrs = event.workflowExecutionSignaledEventAttributes;
        if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED && attrs?.signalName === PUBLISH_SIGNAL) {
          signals++;
          const signal = { signaledMs: tsToMs(event.eventTime), taskStartMs: NaN, taskDoneMs: NaN };
          pending.push(signal);
          const input = defaultPayloadConverter.fromPayload<PublishInput>(attrs.input!.payloads![0]);
          let carried = 0;
          for (const item of input.items) {
            const data = defaultPayloadConverter.fromPayload<{ type?: string; text?: string }>(decodePayloadWire(item.data));
            if (data?.type !== 'text_delta' || !data.text) continue;
            for (const token of data.text.match(TOKEN) ?? []) {
              if (!signalOf.has(token)) signalOf.set(token, signal);
              carried++;
            }
          }
          if (carried > 0) chunksPerBatch.push(carried);
        } else if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED) {
          // Signals recorded before a task started are in that task's activation.
          for (const s of pending) s.taskStartMs = tsToMs(event.eventTime);
          inTask = pending;
          pending = [];
        } else if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) {
          for (const s of inTask) s.taskDoneMs = tsToMs(event.eventTime);
          inTask = [];
        } else if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED || event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT) {
          // The signals go with the next task.
          pending = [...inTask, ...pending];
          inTask = [];
        }
      }

      const ours = new Set(chunks);
      const written = new Map(fake.chunkTimes.filter((c) => ours.has(c.text)).map((c) => [c.text, c.at]));
      const latencies: number[] = [];
      const parts: AnswerResult['parts'] = { batchWait: [], signal: [], taskQueue: [], taskRun: [], poll: [] };
      const slow: AnswerResult['slow'] = [];
      let firstBatchWait = NaN;
      if (watch) {
        const missing = chunks.filter((c) => !seen.has(c) || !written.has(c));
        if (missing.length > 0) throw new Error(`${name}: ${missing.length} chunks never seen by the watcher (first: ${JSON.stringify(missing[0])})`);
        for (const chunk of chunks) {
          const writeAt = written.get(chunk)!;
          const { seenAt, publishedAt } = seen.get(chunk)!;
          if (chunk === chunks[0]) firstBatchWait = publishedAt - writeAt;
          latencies.push(seenAt - writeAt);
          const signal = signalOf.get(chunk);
          if (!signal || Number.isNaN(signal.taskDoneMs)) continue;
          const these = {
            batchWait: publishedAt - writeAt,
            signal: signal.signaledMs - publishedAt,
            taskQueue: signal.taskStartMs - signal.signaledMs,
            taskRun: signal.taskDoneMs - signal.taskStartMs,
            poll: seenAt - signal.taskDoneMs,
          };
          for (const [key, value] of Object.entries(these)) parts[key as keyof typeof these].push(value);
          if (seenAt - writeAt > TARGET_P99_MS) slow.push({ latency: seenAt - writeAt, ...these });
        }
      }
      const times = chunks.map((c) => written.get(c)).filter((t): t is number => t !== undefined);
      const spanS = times.length > 1 ? (times.at(-1)! - times[0]) / 1000 : NaN;
      return {
        chunks: chunks.length,
        chunksPerSecond: round((chunks.length - 1) / spanS),
        latencies,
        parts,
        slow,
        firstBatchWait,
        chunksPerBatch,
        runEvents: events.length,
        children,
        childEvents: childEvents.length,
        signals,
        textDeltas,
        wallMs,
      };
    };

    const chunksOf = (label: string, n: number) => Array.from({ length: n }, (_, i) => `${label}c${i} `);

    /** AGENTS agents streaming at once for AGENT_SECONDS, followed by a stock poll-update reader: what the run and each agent take. */
    const limitsUnderLoad = async () => {
      const yaml = `name: streaming-limits\nsteps:\n  - { id: write, forEach: "{{ inputs.items }}", concurrency: ${AGENTS}, agent: { prompt: "write part {{ item }}", model: "openai:gpt-4o-mini" } }\ninputs:\n  items: { type: json }\n`;
      const validated = validatePlan(YAML.parse(yaml), { baseDir: tmp });
      if (!validated.ok) throw new Error(formatIssues(validated.issues));
      const perAgent = (AGENT_SECONDS * 1000) / 50;
      for (let i = 0; i < AGENTS; i++) fake.enqueue({ chunks: chunksOf(`l${i}`, perAgent), chunkDelayMs: 50, usage: { inputTokens: 5, outputTokens: perAgent } });
      const items = Array.from({ length: AGENTS }, (_, i) => i);
      const { workflowId } = await client.start(validated.plan, { items }, { workflowId: `bench-streaming-limits-${process.pid}`, taskQueue });
      const agentIds = items.map((i) => `${workflowId}/write[${i}]`);
      // The stock follower: one long-poll subscription a stream, as Python's client reads (updates, not queries).
      const follow = (id: string, last: string) => followByPolls(client.client, id, last);
      const followed = await Promise.all([follow(workflowId, 'run_completed'), ...agentIds.map((id) => follow(id, 'agent_ended'))]);
      await client.client.workflow.getHandle(workflowId).result();
      const count = (events: HistoryEvent[]) => ({
        events: events.length,
        signals: events.filter((e) => e.workflowExecutionSignaledEventAttributes).length,
        updates: events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length,
      });
      const root = count((await client.client.workflow.getHandle(workflowId).fetchHistory()).events ?? []);
      const agents = await Promise.all(agentIds.map(async (id) => count((await client.client.workflow.getHandle(id).fetchHistory()).events ?? [])));
      const streamedSeconds = agentIds.map((id) => {
        const times = fake.chunkTimes.filter((c) => c.text.startsWith(`l${agentIds.indexOf(id)}c`)).map((c) => c.at);
        return (Math.max(...times) - Math.min(...times)) / 1000;
      });
      const agentSeconds = streamedSeconds.reduce((a, b) => a + b, 0);
      const mean = (key: keyof typeof root) => agents.reduce((n, a) => n + a[key], 0) / agents.length;
      const perSecond = (n: number, seconds: number) => round(n / seconds, 2);
      const agentSecondsEach = agentSeconds / agents.length;
      return {
        what: `${AGENTS} agents of one run stream at once for ${AGENT_SECONDS} s each (a chunk every 50 ms), followed by a stock poll-update reader of every stream`,
        agents: AGENTS,
        agentSeconds: round(agentSeconds),
        itemsFollowed: followed.reduce((a, b) => a + b, 0),
        root: { ...root, perAgentSecond: { events: perSecond(root.events, agentSeconds), signals: perSecond(root.signals, agentSeconds), updates: perSecond(root.updates, agentSeconds) } },
        perAgent: {
          events: round(mean('events')),
          signals: round(mean('signals')),
          updates: round(mean('updates')),
          perSecondOfStreaming: { events: perSecond(mean('events'), agentSecondsEach), signals: perSecond(mean('signals'), agentSecondsEach), updates: perSecond(mean('updates'), agentSecondsEach) },
        },
        targetRootEventsPerAgentSecond: TARGET_ROOT_EVENTS_PER_AGENT_SECOND,
        met: root.events / agentSeconds <= TARGET_ROOT_EVENTS_PER_AGENT_SECOND,
      };
    };

    /** A session sent MEMORY_EVENTS events through its stream's publish signal, as activities send them: what its log still holds. */
    const boundedSession = async () => {
      const sessionId = `bench-streaming-session-${process.pid}`;
      await sendMessage(client, sessionId, 'hello', sessionInput({ model: 'openai:gpt-4o-mini', workspace: tmp }), { taskQueue });
      const handle = client.client.workflow.getHandle(sessionId);
      const before = await handle.query(workflowStreamOffsetQuery);
      // Sent by explicit flushes; its own flusher's timer (still pending when it is disposed) is short, not to hold the process up.
      const publisher = WorkflowStreamClient.create(client.client, sessionId, { batchInterval: '1 second' });
      const topic = publisher.topic(STREAM_TOPIC);
      const at = Date.now();
      for (let i = 0; i < MEMORY_EVENTS; i++) {
        topic.publish(typicalEvent(i, at));
        if ((i + 1) % PUBLISH_BATCH === 0) await publisher.flush();
      }
      await publisher[Symbol.asyncDispose]();
      // The last signal's workflow task (and the trimming after it) may still be under way.
      let end = await handle.query(workflowStreamOffsetQuery);
      for (const deadline = Date.now() + 10_000; end < before + MEMORY_EVENTS && Date.now() < deadline; ) {
        await new Promise((r) => setTimeout(r, 50));
        end = await handle.query(workflowStreamOffsetQuery);
      }
      if (end < before + MEMORY_EVENTS) throw new Error(`the session's stream reached offset ${end}, expected ${before + MEMORY_EVENTS}`);
      let page = await handle.query(streamQuery, { from: 0 });
      const base = page.base;
      let heldJsonChars = 0;
      for (;;) {
        heldJsonChars += page.events.reduce((n, e) => n + JSON.stringify(e).length, 0);
        if (!page.more) break;
        page = await handle.query(streamQuery, { from: page.next, max: STREAM_PAGE_EVENTS });
      }
      const historyEvents = ((await handle.fetchHistory()).events ?? []).length;
      await endSession(client, sessionId);
      await handle.result();
      return { published: end - before, offset: end, base, held: end - base, heldJsonChars, historyEvents };
    };

    const measured = await worker.runUntil(
      (async () => {
        log(`warm-up: one answer of ${WARMUP_CHUNKS} chunks`);
        await answer('warm', chunksOf('w', WARMUP_CHUNKS), CHUNK_DELAY_MS, true);
        // What needs no timing goes while the analytics writer creates its database (the first finished run's, once).
        log(`the answer of ${CHUNKS} chunks in one chunk (history baseline)`);
        const whole = await answer('whole', [chunksOf('b', CHUNKS).join('')], 0, false);
        log(`a session sent ${MEMORY_EVENTS} events...`);
        const session = await boundedSession();
        log(`${AGENTS} agents streaming at once for ${AGENT_SECONDS} s, followed by poll updates...`);
        const limits = await limitsUnderLoad();
        log(`a bare WorkflowStream given ${MEMORY_EVENTS} events (workflow on the dev server)...`);
        const probe = (await client.client.workflow.execute('streamStateProbe', { args: [MEMORY_EVENTS], taskQueue, workflowId: `bench-streaming-probe-${process.pid}` })) as {
          items: number;
          stateBytes: number;
          itemDataChars: number;
        };
        await analyticsSettled(log);

        loopDelay.enable();
        const answers: AnswerResult[] = [];
        for (let k = 1; k <= ANSWERS; k++) {
          log(`answer ${k}/${ANSWERS}: ${CHUNKS} chunks, ${CHUNK_DELAY_MS} ms apart`);
          answers.push(await answer(`a${k}`, chunksOf(`a${k}`, CHUNKS), CHUNK_DELAY_MS, true));
        }
        loopDelay.disable();
        log('stopping the worker...');
        return { answers, whole, session, probe, limits };
      })(),
    );
    await client.close();
    await connection.close();
    await fake.close();

    const { answers, whole, session, probe, limits } = measured;
    const latencies = answers.flatMap((a) => a.latencies);
    const latency = stats(latencies);
    const part = (key: keyof AnswerResult['parts']) => stats(answers.flatMap((a) => a.parts[key]));
    const sum = (f: (a: AnswerResult) => number) => answers.reduce((n, a) => n + f(a), 0);
    const chunks = sum((a) => a.chunks);
    const streamedEvents = sum((a) => a.runEvents + a.childEvents) / answers.length;
    const wholeEvents = whole.runEvents + whole.childEvents;
    const late = (ns: number) => round(Math.max(0, ns / 1e6 - LOOP_SAMPLE_MS));
    const report = {
      // The load average when the benchmark started and ended: other work on the machine shows in the tail.
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? 'unknown', platform: `${os.platform()} ${os.release()}`, loadAverage1m: [round(load0, 2), round(os.loadavg()[0], 2)] },
      settings: { batchMs: batchInterval(), pollMs: POLL_MS ?? 50, answers: ANSWERS, chunksPerAnswer: CHUNKS, chunkDelayMs: CHUNK_DELAY_MS },
      latency: {
        what: 'chunk written by the fake model server → first seen by a client.events watcher, every chunk of every answer (ms)',
        chunks: latencies.length,
        chunksPerSecond: round(sum((a) => a.chunksPerSecond) / answers.length),
        ...latency,
        targetP99Ms: TARGET_P99_MS,
        met: latency.p99 <= TARGET_P99_MS,
        perAnswerP99: answers.map((a) => stats(a.latencies).p99),
        // The first chunk of each answer, and its wait in the publisher: the turn's `message_start` went at once,
        // and a first chunk that comes within the batch interval after it waits for the interval's end.
        firstChunkMs: answers.map((a) => a.latencies[0]),
        firstChunkBatchWaitMs: answers.map((a) => a.firstBatchWait),
        // Consecutive parts that add up to the latency (history event times: the server's clock, this machine's).
        partsMs: {
          what: 'write → the batch leaves the publisher (its `at`) → publish signal recorded → workflow task started → completed → seen by the watcher',
          batchWait: part('batchWait'),
          signal: part('signal'),
          taskQueue: part('taskQueue'),
          taskRun: part('taskRun'),
          poll: part('poll'),
        },
        // The chunks over the target, and the mean of each part for them: where the tail's time went.
        overTarget: (() => {
          const slow = answers.flatMap((a) => a.slow);
          const mean = (key: keyof (typeof slow)[number]) => round(slow.reduce((n, c) => n + c[key], 0) / Math.max(1, slow.length));
          return { chunks: slow.length, meanMs: { latency: mean('latency'), batchWait: mean('batchWait'), signal: mean('signal'), taskQueue: mean('taskQueue'), taskRun: mean('taskRun'), poll: mean('poll') } };
        })(),
        chunksPerBatch: stats(answers.flatMap((a) => a.chunksPerBatch)),
        answerSeconds: round(sum((a) => a.wallMs) / answers.length / 1000, 2),
        // This process hosts the worker (activities; workflows run in its worker threads), the fake model and the
        // watcher: how late its event loop ran a timer during the answers (samples every LOOP_SAMPLE_MS, that much taken off).
        eventLoopDelayMs: { p50: late(loopDelay.percentile(50)), p99: late(loopDelay.percentile(99)), max: late(loopDelay.max) },
      },
      history: {
        what: "events of the run and its agent child: a streamed answer against the same answer sent as one chunk (the text's signals go to the agent)",
        chunksPerSecond: round(sum((a) => a.chunksPerSecond) / answers.length),
        childWorkflowsPerRun: whole.children,
        streamedRunEvents: round(streamedEvents),
        oneChunkRunEvents: wholeEvents,
        eventsPer100Chunks: round(((streamedEvents - wholeEvents) / CHUNKS) * 100, 2),
        signalsPer100Chunks: round((sum((a) => a.signals) / chunks) * 100, 2),
        totalEventsPer100Chunks: round((streamedEvents / CHUNKS) * 100, 2),
        signalsPerAnswer: round(sum((a) => a.signals) / answers.length),
        oneChunkSignals: whole.signals,
        textDeltasPerAnswer: round(sum((a) => a.textDeltas) / answers.length),
      },
      limits,
      memory: {
        events: MEMORY_EVENTS,
        eventJsonChars: JSON.stringify(typicalEvent(0, Date.now())).length,
        stateBytes: {
          what: 'JSON.stringify(WorkflowStream.getState()).length of a bare stream (no trimming) given 10,000 text_delta events, in a workflow on the dev server',
          bytes: probe.stateBytes,
          bytesPerEvent: round(probe.stateBytes / probe.items),
          items: probe.items,
        },
        heap: { what: 'V8 heapUsed + external growth for the same 10,000 log items ({topic, payload}) built in this Node process', ...heap },
        bounded: {
          what: "a cadre session sent 10,000 events through the stream's publish signal (500 a signal): items its log still holds",
          published: session.published,
          held: session.held,
          oldestOffset: session.base,
          heldJsonChars: session.heldJsonChars,
          limit: HELD_LIMIT,
          met: session.held <= HELD_LIMIT,
          // What that many items take, at the heap figure per event above: now, and at most (HELD_LIMIT items).
          heldHeapBytesEstimate: Math.round(session.held * heap.bytesPerEvent),
          limitHeapBytesEstimate: Math.round(HELD_LIMIT * heap.bytesPerEvent),
          sessionHistoryEvents: session.historyEvents,
        },
      },
      wallSeconds: round((performance.now() - t0) / 1000),
      server: server.address,
      node: process.version,
      date: new Date().toISOString(),
    };
    writeResults(RESULTS_FILE, report);
    const parts = (key: keyof AnswerResult['parts']) => answers.flatMap((a) => a.parts[key]);
    await writePlot(
      RESULTS_FILE.replace(/\.json$/, '.svg'),
      distribution({
        title: `${latencies.length.toLocaleString('en')} streamed chunks: written → seen by a watcher, and its parts (load ${round(load0, 1)})`,
        xTitle: 'ms',
        logX: true,
        series: {
          'written → seen': latencies,
          "publisher's batch wait": parts('batchWait'),
          'publish signal': parts('signal'),
          "waiting for the run's workflow task": parts('taskQueue'),
          'that workflow task': parts('taskRun'),
          "watcher's poll": parts('poll'),
        },
        marks: [{ value: TARGET_P99_MS, label: `p99 target ${TARGET_P99_MS} ms` }],
      }),
    );
    if (!report.memory.bounded.met) throw new Error(`the session's stream held ${session.held} items after ${MEMORY_EVENTS} events (limit ${HELD_LIMIT})`);
  } finally {
    await fake.close().catch(() => undefined);
    await server.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

runMain(main, log);
