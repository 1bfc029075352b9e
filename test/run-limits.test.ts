/**
 * A run never goes deaf (docs/streaming.md, "What a run can take"): agents that stream for long
 * leave their plan run's signals, updates and history to what controls it; a noisy team's moves
 * reach its board without using up the team run's signals; a stock Python follower cannot use up
 * the updates people's answers need; a run past its history budget continues as new.
 *
 * Most tests run on a dev server of their own whose limits are a tenth of Temporal's defaults
 * (1,000 signals a run), at a tenth of the scale people ran into them with: the same runs, failing
 * the same way on code that spends signals per chunk or per move.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkflowUpdateFailedError, WorkflowUpdateStage } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import YAML from 'yaml';
import { modelSettings } from '../src/providers/config';
import { startDevServer, type TemporalServer } from '../src/worker/dev-server';
import { registerSearchAttributes } from '../src/worker/embedded';
import { agentDiagnosticsQuery } from '../src/protocol/definitions';
import { runLimitReached } from '../src/client/limit-errors';
import type { StreamEventAt } from '../src/streaming/events';
import { type FakeModelServer, startFakeModelServer } from './support/fake-model-server';
import { runCadre, testServerEnv } from './support/cli';
import { type Harness, compile, startPlan, tempWorkspace, waitUntil, withWorker } from './support/harness';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** A tenth of Temporal's 10,000 signals a run; Temporal suggests continuing as new at 400 events instead of 4,096. */
const LOW_LIMITS = { 'history.maximumSignalsPerExecution': 1000, 'limit.historyCount.suggestContinueAsNew': 400 };

let models: FakeModelServer;
let low: TemporalServer;
beforeAll(async () => {
  models = await startFakeModelServer();
  low = await startDevServer({ dataDir: mkdtempSync(path.join(os.tmpdir(), 'cadre-low-limits-')), ephemeral: true, dynamicConfig: LOW_LIMITS });
  await registerSearchAttributes(low, () => undefined);
}, 120_000);
afterAll(async () => {
  await models?.close();
  await low?.stop();
});

function onLowLimits<T>(fn: (h: Harness) => Promise<T>): Promise<T> {
  const settings = modelSettings({}, { OPENAI_API_KEY: 'sk-test-run-limits', OPENAI_BASE_URL: models.baseURL });
  return withWorker(fn, { activityDeps: { models: settings }, address: low.address });
}

/** Every event of every run of a workflow, the first run first (it may have continued as new). */
async function allRuns(h: Harness, workflowId: string): Promise<HistoryEvent[][]> {
  const runs: HistoryEvent[][] = [];
  let runId: string | undefined;
  do {
    const events = (await h.client.client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    runs.unshift(events);
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  } while (runId);
  return runs;
}

const words = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i} `);
const signalsIn = (events: HistoryEvent[]) => events.filter((e) => e.workflowExecutionSignaledEventAttributes).length;
const updatesIn = (events: HistoryEvent[]) => events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
/** Signals a workflow sent that Temporal refused, with why. */
const refused = (events: HistoryEvent[]) =>
  events.flatMap((e) => {
    const cause = e.signalExternalWorkflowExecutionFailedEventAttributes?.cause;
    return cause === undefined || cause === null ? [] : [temporal.api.enums.v1.SignalExternalWorkflowExecutionFailedCause[cause] ?? String(cause)];
  });

test('sixteen agents stream for long; the approval asked after them is shown, answered, and the run completes', async () => {
  const ws = tempWorkspace();
  writeFileSync(path.join(ws, 'notes.txt'), 'the notes');
  const plan = compile(
    `name: deaf-run
steps:
  - id: write
    forEach: "{{ inputs.items }}"
    concurrency: 16
    agent: { prompt: "write part {{ item }}", model: "openai:gpt-4o-mini" }
  - id: read
    dependsOn: [write]
    agent: { prompt: "read notes.txt", model: "openai:gpt-4o-mini", tools: [fs.read], approvals: { fs.read: ask } }
inputs:
  items: { type: json }
`,
    ws,
  );
  const items = Array.from({ length: 16 }, (_, i) => i);
  // Ten pieces a second for ten seconds each, at 100 ms batches: a hundred signals an agent, 1,600 in all.
  const chunks = Array.from({ length: 100 }, (_, i) => `word${i} `);
  models.enqueue(...items.map(() => ({ chunks, chunkDelayMs: 100, usage: { inputTokens: 5, outputTokens: 100 } })));
  models.enqueue({ text: 'Reading. ', toolCalls: [{ id: 'r1', name: 'fs_read', args: { path: 'notes.txt' } }] }, { text: 'The notes say: the notes.' });
  await onLowLimits(async (h) => {
    const id = await startPlan(h, plan, { items });
    const waiting = await waitUntil(h, id, (d) => d.waiting.some((w) => w.kind === 'approval'), 120_000);
    const approval = waiting.waiting.find((w) => w.kind === 'approval');
    expect(approval?.prompt).toContain('fs.read');
    await h.client.approve(id, approval?.id as string);
    const result = await h.client.result(id);
    expect(result).toMatchObject({ status: 'completed' });

    const runs = await allRuns(h, id);
    const writers = await Promise.all(Array.from({ length: 16 }, (_, i) => h.client.client.workflow.getHandle(`${id}/write[${i}]`).fetchHistory()));
    const agentSignals = writers.map((w) => signalsIn(w.events ?? []));
    console.log(`root: ${runs.length} run(s), ${runs.map(signalsIn).join('+')} signals, ${runs.map((r) => r.length).join('+')} events; each agent took ${Math.min(...agentSignals)}-${Math.max(...agentSignals)} signals`);
    // The run's signals are for what controls it: a few a step, none a chunk.
    for (const run of runs) {
      expect(signalsIn(run)).toBeLessThan(100);
      expect(run.length).toBeLessThan(1024);
      expect(refused(run)).toEqual([]);
    }
    for (const writer of writers) expect(refused(writer.events ?? [])).toEqual([]);
    // Each agent's batches widen as its turn goes on: fewer than one a chunk.
    expect(Math.max(...agentSignals)).toBeLessThan(120);
  });
}, 300_000);

test('a noisy team: twenty workers move often; the board is right at the end and no signal is refused', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-noisy-'));
  const rounds = 25;
  const say = (state: string, reason: string, extra: Record<string, unknown> = {}) => ({ reply: { toolCalls: [{ name: 'signal_state', args: { state, reason, ...extra } }] } });
  const turns = [...Array.from({ length: rounds }, (_, i) => say('blocked', `waiting on CI, round ${i + 1}`, { retryAfter: '10ms' })), say('completing', 'green', { result: 'ok' })];
  writeFileSync(path.join(dir, 'busy.yaml'), YAML.stringify({ turns }));
  const plan = compile(
    `name: noisy-team
team: {}
steps:
  - id: w
    forEach: "{{ inputs.items }}"
    concurrency: 20
    agent: { prompt: "work on {{ item }}", model: "scripted:${path.join(dir, 'busy.yaml')}", maxTurns: ${rounds + 5} }
inputs:
  items: { type: json }
`,
    dir,
  );
  // Each: running, blocked and running again each round, completing, completed: 53 moves, 1,060 in all.
  const moves = 1 + 2 * rounds + 2;
  await onLowLimits(async (h) => {
    const id = await startPlan(h, plan, { items: Array.from({ length: 20 }, (_, i) => i) });
    const result = await h.client.result(id);
    expect(result.status).toBe('completed');
    const workers = result.workers ?? [];
    expect(workers).toHaveLength(20);
    for (const worker of workers) {
      const own = await h.client.client.workflow.getHandle(worker.workflowId).query(agentDiagnosticsQuery);
      expect(own.moves).toBe(moves);
      expect(worker).toMatchObject({ state: 'completed', seq: moves, fingerprint: own.fingerprint, duplicates: 0 });
      expect(refused((await h.client.client.workflow.getHandle(worker.workflowId).fetchHistory()).events ?? [])).toEqual([]);
    }
    const runs = await allRuns(h, id);
    console.log(`noisy team: ${20 * moves} moves, ${runs.map(signalsIn).join('+')} signals to the team run`);
    for (const run of runs) expect(refused(run)).toEqual([]);
    // Spaced out, a worker's reports grow with the log of how long it runs, not with its moves.
    expect(runs.reduce((n, run) => n + signalsIn(run), 0)).toBeLessThan(800);
  });
}, 300_000);

test('a run past its history budget continues as new, carries its steps on, and replays', async () => {
  const ws = tempWorkspace();
  // About four events a step: two more runs after the forEach's.
  const CHAIN = 180;
  const plan = compile(
    `name: long-history
steps:
  - id: write
    forEach: "{{ inputs.items }}"
    concurrency: 6
    agent: { prompt: "write part {{ item }}", model: "openai:gpt-4o-mini" }
${Array.from({ length: CHAIN }, (_, i) => `  - { id: s${i}, dependsOn: [${i === 0 ? 'write' : `s${i - 1}`}], tool: shell, with: { command: "echo ${i}" } }`).join('\n')}
  - { id: last, dependsOn: [s${CHAIN - 1}], echo: { parts: "{{ steps.write.output }}", tail: "{{ steps.s${CHAIN - 1}.output.stdout }}" } }
output: "{{ steps.last.output }}"
inputs:
  items: { type: json }
`,
    ws,
  );
  const items = Array.from({ length: 30 }, (_, i) => i);
  models.enqueue(...items.map((i) => ({ chunks: [`part `, `${i}`], chunkDelayMs: 5 })));
  await onLowLimits(async (h) => {
    const id = await startPlan(h, plan, { items });
    const events: StreamEventAt[] = [];
    for await (const e of h.client.events(id)) events.push(e);
    const result = await h.client.result(id);
    expect(result.status).toBe('completed');
    // The model answers in the order it is asked, which six items at once do not keep.
    const { parts, tail } = result.output as { parts: string[]; tail: string };
    expect([...parts].sort()).toEqual(items.map((i) => `part ${i}`).sort());
    expect(tail).toBe(`${CHAIN - 1}\n`);
    const runs = await allRuns(h, id);
    console.log(`long history: ${runs.length} runs of ${runs.map((r) => r.length).join(', ')} events`);
    expect(runs.length).toBeGreaterThanOrEqual(3);
    expect(result.continuedAsNew).toBe(runs.length - 1);
    // Every step ran once, in one of the runs, and its record came along.
    expect(result.steps.every((s) => s.status === 'completed' && (s.id === 'write' || s.attempts === 1))).toBe(true);
    // The stream went on across the runs, its offsets counting on: every step started and ended once.
    const own = events.filter((e) => e.stream === undefined);
    expect(own.map((e) => e.offset)).toEqual(own.map((_, i) => own[0].offset + i));
    expect(own.filter((e) => e.type === 'step_completed').map((e) => e.step)).toEqual(result.steps.map((s) => s.id));
    expect(own.at(-1)).toMatchObject({ type: 'run_completed', status: 'completed' });
  });
}, 300_000);

test("outside readers' long polls are held to a share of a run's updates: the sixth open and the 501st are refused, answers are not", async () => {
  const plan = compile(`name: polled\nsteps:\n  - { id: first, ask: { question: "First?", choices: [yes] } }\n  - { id: second, dependsOn: [first], ask: { question: "Second?", choices: [yes] } }\n`, tempWorkspace());
  await withWorker(async (h) => {
    const id = await startPlan(h, plan);
    await waitUntil(h, id, (d) => d.waiting.length > 0);
    const handle = h.client.client.workflow.getHandle(id);
    const poll = (from: number) => handle.startUpdate<unknown, [unknown]>('__temporal_workflow_stream_poll', { args: [{ topics: ['events'], from_offset: from }], waitForStage: WorkflowUpdateStage.ACCEPTED });
    const refusal = (err: unknown) => (err instanceof WorkflowUpdateFailedError ? `${(err.cause as { type?: string })?.type}: ${err.cause?.message}` : String(err));
    // A refused update comes back with its outcome at once; an open long poll has none yet.
    const outcome = (u: Awaited<ReturnType<typeof poll>>) => Promise.race([u.result().then(() => 'returned', refusal), new Promise<string>((r) => setTimeout(() => r('open'), 1000))]);
    // Five polls wait for events the answer will bring; the sixth is refused, and says where to read instead.
    const ahead = (await handle.query<number>('__temporal_workflow_stream_offset')) + 1;
    const open = await Promise.all(Array.from({ length: 5 }, () => poll(ahead)));
    expect(await Promise.all(open.map(outcome))).toEqual(Array(5).fill('open'));
    expect(await poll(ahead).then(outcome)).toMatch(/^StreamPollLimit: 5 long polls .* `stream` query/);
    // A person's answer still goes through: the run keeps room for it.
    await h.client.answer(id, 'first', 'yes');
    expect(await Promise.all(open.map(outcome))).toEqual(Array(5).fill('returned'));
    await waitUntil(h, id, (d) => d.waiting.some((w) => w.id === 'second'));
    // Polls that return at once, up to the run's share of 500 in all (the five open ones count).
    let accepted = open.length;
    for (;;) {
      const said = await poll(0).then(outcome);
      if (said !== 'returned') {
        expect(said).toMatch(/^StreamPollLimit: this run has taken 500 polls/);
        break;
      }
      accepted++;
    }
    expect(accepted).toBe(500);
    await h.client.answer(id, 'second', 'yes');
    expect((await h.client.result(id)).status).toBe('completed');
    const events = (await handle.fetchHistory()).events ?? [];
    // Refused polls left nothing in history; the accepted ones and the two answers did.
    expect(updatesIn(events)).toBe(502);
    expect((await h.client.diagnostics(id)).limits).toMatchObject({ updates: 502, polls: 500 });
  });
}, 180_000);

test('a signal Temporal refuses is never silent: the agent says so, shows its wait itself and takes the answer; a client is told the limit', async () => {
  const full = await startDevServer({ dataDir: mkdtempSync(path.join(os.tmpdir(), 'cadre-full-run-')), ephemeral: true, dynamicConfig: { 'history.maximumSignalsPerExecution': 12 } });
  try {
    await registerSearchAttributes(full, () => undefined);
    const ws = tempWorkspace();
    writeFileSync(path.join(ws, 'notes.txt'), 'the notes');
    const plan = compile(`name: full-run\nsteps:\n  - { id: act, agent: { prompt: "read notes.txt", model: "openai:gpt-4o-mini", tools: [shell, fs.read], approvals: { fs.read: ask } } }\n`, ws);
    models.enqueue(
      { text: 'First a pause. ', toolCalls: [{ id: 's1', name: 'shell', args: { command: 'sleep 3' } }] },
      { text: 'Now reading. ', toolCalls: [{ id: 'r1', name: 'fs_read', args: { path: 'notes.txt' } }] },
      { text: 'The notes say: the notes.' },
    );
    const settings = modelSettings({}, { OPENAI_API_KEY: 'sk-test-run-limits', OPENAI_BASE_URL: models.baseURL });
    await withWorker(
      async (h) => {
        const id = await startPlan(h, plan);
        const agent = `${id}/act`;
        // Someone floods the run with signals while its agent runs a command: the run takes no more.
        const handle = h.client.client.workflow.getHandle(id);
        let refusal: unknown;
        for (let i = 0; i < 20 && refusal === undefined; i++) await handle.signal('resume').catch((err: unknown) => (refusal = err));
        expect(runLimitReached(refusal, id)).toMatchObject({ limit: 'signals', message: expect.stringContaining('history.maximumSignalsPerExecution') });
        // The agent's approval does not reach its run: it says so in its stream, and shows the wait itself.
        const events: StreamEventAt[] = [];
        for await (const e of h.client.events(agent, { awaitStart: true })) {
          events.push(e);
          if (e.type === 'approval_requested') break;
        }
        const said = events.filter((e) => e.type === 'error' && e.errorType === 'SignalCountLimitExceeded').map((e) => (e as { message: string }).message);
        expect(said).toEqual(expect.arrayContaining([expect.stringContaining('agentWaits did not reach it')]));
        const asked = events.find((e) => e.type === 'approval_requested') as StreamEventAt & { waitId: string };
        expect((await h.client.client.workflow.getHandle(agent).query(agentDiagnosticsQuery)).waiting.map((w) => w.id)).toEqual([asked.waitId]);
        // Answered at the agent, it goes on; the run completes with it.
        await h.client.approve(agent, asked.waitId);
        expect((await h.client.result(id)).status).toBe('completed');
        const agentHistory = (await h.client.client.workflow.getHandle(agent).fetchHistory()).events ?? [];
        expect(refused(agentHistory)).toContain('SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED_CAUSE_SIGNAL_COUNT_LIMIT_EXCEEDED');
      },
      { activityDeps: { models: settings }, address: full.address },
    );
  } finally {
    await full.stop();
  }
}, 180_000);

test('a run past 80% of its signals warns in its stream, and `cadre status` shows its counts against the limits it was given', async () => {
  const plan = compile(`name: flooded\nsteps:\n  - { id: hold, ask: { question: "Go?", choices: [yes] } }\n`, tempWorkspace());
  await onLowLimits(async (h) => {
    // The low server takes 1,000 signals a run, and the run is told so (CADRE_RUN_LIMITS for the CLI).
    const { workflowId: id } = await h.client.start(plan, {}, { workflowId: `flooded-${Date.now()}`, taskQueue: h.taskQueue, limits: { signals: 1000 } });
    await waitUntil(h, id, (d) => d.waiting.length > 0);
    const handle = h.client.client.workflow.getHandle(id);
    // 810 signals from outside, 30 at a time: past 80% of the run's 1,000.
    for (let sent = 0; sent < 810; sent += 30) await Promise.all(Array.from({ length: 30 }, () => handle.signal('resume')));
    const d = await waitUntil(h, id, (x) => (x.limits?.signals ?? 0) >= 810);
    expect(d.limits).toMatchObject({ signals: 810, updates: 0, max: { signals: 1000, updates: 2000 } });
    const status = await runCadre(['status', id], tempWorkspace(), { ...testServerEnv(), TEMPORAL_ADDRESS: low.address, CADRE_TASK_QUEUE: h.taskQueue });
    expect(status.stdout).toMatch(/limits: 810 of 1,000 signals \(81%\): Temporal's per-run limits/);
    await h.client.answer(id, 'hold', 'yes');
    const events: StreamEventAt[] = [];
    for await (const e of h.client.events(id)) events.push(e);
    expect(events.filter((e) => e.type === 'limits_warning')).toEqual([expect.objectContaining({ limit: 'signals', max: 1000, used: 800, message: expect.stringContaining('CadreLimits') })]);
    expect((await h.client.result(id)).status).toBe('completed');
  });
}, 240_000);

test('an agent near its limits stops streaming its text, says so once, and still shows its turns', async () => {
  const plan = compile(`name: shed\nsteps:\n  - { id: talk, agent: { prompt: "talk at length", model: "openai:gpt-4o-mini" } }\n`, tempWorkspace());
  // Five turns of text: with 40 signals a run, the agent sheds its text at 20.
  const turns = Array.from({ length: 5 }, (_, i) => ({ chunks: words(30, `t${i}-`), chunkDelayMs: 50, toolCalls: i < 4 ? [{ id: `c${i}`, name: 'nothing', args: { round: i } }] : undefined }));
  models.enqueue(...turns);
  await onLowLimits(async (h) => {
    const { workflowId: id } = await h.client.start(plan, {}, { workflowId: `shed-${Date.now()}`, taskQueue: h.taskQueue, limits: { signals: 40 } });
    const events: StreamEventAt[] = [];
    for await (const e of h.client.events(id)) events.push(e);
    expect((await h.client.result(id)).status).toBe('completed');
    const ofAgent = events.filter((e) => e.stream !== undefined);
    const shed = ofAgent.filter((e) => e.type === 'stream_shed');
    expect(shed).toEqual([expect.objectContaining({ step: 'talk', reason: expect.stringContaining('of Temporal\'s 40 signals a run') })]);
    const at = ofAgent.indexOf(shed[0]);
    // Before: text; after: none, but every turn's start, calls and end.
    expect(ofAgent.slice(0, at).some((e) => e.type === 'text_delta')).toBe(true);
    expect(ofAgent.slice(at).filter((e) => e.type === 'text_delta')).toEqual([]);
    expect(ofAgent.filter((e) => e.type === 'message_complete')).toHaveLength(5);
    const agentSignals = signalsIn((await h.client.client.workflow.getHandle(`${id}/talk`).fetchHistory()).events ?? []);
    expect(agentSignals).toBeLessThanOrEqual(22);
  });
}, 240_000);
