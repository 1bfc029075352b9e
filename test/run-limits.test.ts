/**
 * A run never goes deaf (docs/streaming.md, "What a run can take"): agents that stream for long
 * leave their plan run's signals, updates and history to what controls it; a run past its history
 * budget continues as new; a run near its limits warns, and an agent near its own sheds its text.
 *
 * On a dev server whose limits are a twentieth of Temporal's defaults (test/support/limits.ts), at
 * a twentieth of the scale people ran into them with: the same runs, failing the same way on code
 * that spends a signal per chunk.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import type { StreamEventAt } from '../src/streaming/events';
import { runCadre, testServerEnv } from './support/cli';
import { compile, startPlan, tempWorkspace, waitUntil, withWorker } from './support/harness';
import { followByPolls } from './support/poll-follower';
import { within } from './support/until';
import { SIGNALS_LIMIT, allRuns, onServer, lowLimitServers, refused, serverWith, signalsIn, words } from './support/limits';

const servers = lowLimitServers();

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
  // Ten pieces a second for five seconds each, at 100 ms batches: fifty signals an agent, 800 in all,
  // as sixteen agents streaming for 100 s sent 16,000 to a run that takes 10,000.
  const chunks = Array.from({ length: 50 }, (_, i) => `word${i} `);
  servers.models.enqueue(...items.map(() => ({ chunks, chunkDelayMs: 100, usage: { inputTokens: 5, outputTokens: 100 } })));
  servers.models.enqueue({ text: 'Reading. ', toolCalls: [{ id: 'r1', name: 'fs_read', args: { path: 'notes.txt' } }] }, { text: 'The notes say: the notes.' });
  await onServer(servers.low, servers.models, async (h) => {
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
      // A tenth of the run's limit at most, and a twentieth of Temporal's warning of 10,240 events.
      expect(signalsIn(run)).toBeLessThan(SIGNALS_LIMIT / 10);
      expect(run.length).toBeLessThan(512);
      expect(refused(run)).toEqual([]);
    }
    for (const writer of writers) expect(refused(writer.events ?? [])).toEqual([]);
    // Each agent's batches widen as its turn goes on: fewer than one a chunk.
    expect(Math.max(...agentSignals)).toBeLessThan(SIGNALS_LIMIT / 5);
  });
}, 300_000);

test('a run past its history budget continues as new, carries its steps on, and replays', async () => {
  const ws = tempWorkspace();
  // About four events a step: two more runs after the forEach's.
  const CHAIN = 120;
  const plan = compile(
    `name: long-history
budget: { tokens: 1000000, time: 1h }
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
  const items = Array.from({ length: 20 }, (_, i) => i);
  servers.models.enqueue(...items.map((i) => ({ chunks: [`part `, `${i}`], chunkDelayMs: 5, usage: { inputTokens: 10, outputTokens: 5 } })));
  await onServer(servers.low, servers.models, async (h) => {
    const id = await startPlan(h, plan, { items });
    // Temporal's own reader (poll updates, as Python's) follows it across the runs too, to the last run's end.
    const stock = followByPolls(h.client.client, id, 'run_completed');
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
    // The plan's budget came along: what the forEach's agents spent in the first run, and the deadline from the start.
    expect(result.budget).toMatchObject({ limits: { tokens: 1_000_000 }, spent: { tokens: items.length * 15 }, reserved: { tokens: 0 } });
    expect(Date.parse(result.budget?.deadline as string) - Date.parse(result.startedAt)).toBeGreaterThanOrEqual(3_600_000 - 5_000);
    expect(Date.parse(result.budget?.deadline as string) - Date.parse(result.startedAt)).toBeLessThanOrEqual(3_600_000);
    // Every step ran once, in one of the runs, and its record came along.
    expect(result.steps.every((s) => s.status === 'completed' && (s.id === 'write' || s.attempts === 1))).toBe(true);
    // The stream went on across the runs, its offsets counting on: every step started and ended once.
    const own = events.filter((e) => e.stream === undefined);
    expect(own.map((e) => e.offset)).toEqual(own.map((_, i) => own[0].offset + i));
    expect(own.filter((e) => e.type === 'step_completed').map((e) => e.step)).toEqual(result.steps.map((s) => s.id));
    expect(own.at(-1)).toMatchObject({ type: 'run_completed', status: 'completed' });
    expect(await within('the stock reader at the last run\'s end', stock, 30_000)).toBeGreaterThan(0);
  });
}, 300_000);

test('a run past 80% of its signals warns in its stream, and `cadre status` shows its counts against the limits it was given', async () => {
  const plan = compile(`name: flooded\nsteps:\n  - { id: hold, ask: { question: "Go?", choices: [yes] } }\n`, tempWorkspace());
  await onServer(servers.low, servers.models, async (h) => {
    // The low server takes 500 signals a run, and the run is told so (CADRE_RUN_LIMITS for the CLI).
    const { workflowId: id } = await h.client.start(plan, {}, { workflowId: `flooded-${Date.now()}`, taskQueue: h.taskQueue, limits: { signals: SIGNALS_LIMIT } });
    await waitUntil(h, id, (d) => d.waiting.length > 0);
    const handle = h.client.client.workflow.getHandle(id);
    // 420 signals from outside, 30 at a time: past 80% of the run's 500.
    for (let sent = 0; sent < 420; sent += 30) await Promise.all(Array.from({ length: 30 }, () => handle.signal('resume')));
    const d = await waitUntil(h, id, (x) => (x.limits?.signals ?? 0) >= 420);
    expect(d.limits).toMatchObject({ signals: 420, updates: 0, max: { signals: 500, updates: 2000 } });
    const status = await runCadre(['status', id], tempWorkspace(), { ...testServerEnv(), TEMPORAL_ADDRESS: servers.low.address, CADRE_TASK_QUEUE: h.taskQueue });
    expect(status.stdout).toMatch(/limits: 420 of 500 signals \(84%\): Temporal's per-run limits/);
    await h.client.answer(id, 'hold', 'yes');
    const events: StreamEventAt[] = [];
    for await (const e of h.client.events(id)) events.push(e);
    expect(events.filter((e) => e.type === 'limits_warning')).toEqual([expect.objectContaining({ limit: 'signals', max: 500, used: 400, message: expect.stringContaining('CadreLimits') })]);
    expect((await h.client.result(id)).status).toBe('completed');
  });
}, 240_000);

test('an agent near its limits stops streaming its text, says so once, and still shows its turns', async () => {
  const plan = compile(`name: shed\nsteps:\n  - { id: talk, agent: { prompt: "talk at length", model: "openai:gpt-4o-mini" } }\n`, tempWorkspace());
  // Five turns of text: with 40 signals a run, the agent sheds its text at 20.
  const turns = Array.from({ length: 5 }, (_, i) => ({ chunks: words(30, `t${i}-`), chunkDelayMs: 50, toolCalls: i < 4 ? [{ id: `c${i}`, name: 'nothing', args: { round: i } }] : undefined }));
  servers.models.enqueue(...turns);
  await onServer(servers.low, servers.models, async (h) => {
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

/** A scripted agent reading `files` in turn (the same call again and again would be stopped as a loop), then answering. */
function reader(ws: string, files: string[], reads: number): ReturnType<typeof compile> {
  const read = (i: number) => ({ reply: { toolCalls: [{ name: 'fs_read', args: { path: files[i % files.length] } }] } });
  writeFileSync(path.join(ws, 'reader.yaml'), YAML.stringify({ turns: [...Array.from({ length: reads }, (_, i) => read(i)), { reply: { text: 'done' } }] }));
  return compile(`name: long-read\nsteps:\n  - id: read\n    agent: { prompt: "read the notes again and again", model: "scripted:${path.join(ws, 'reader.yaml')}", tools: [fs.read], maxTurns: ${reads + 1} }\n`, ws);
}

/** A worker on a server of its own that terminates a run past `limit` bytes of history (Temporal's default is 50 MB). */
async function withHistoryLimit(limit: number, work: Parameters<typeof withWorker>[0]): Promise<void> {
  const server = await serverWith({ 'limit.historySize.error': limit, 'limit.historySize.warn': limit / 2 });
  try {
    await withWorker(work, { address: server.address });
  } finally {
    await server.stop();
  }
}

/** Three files of `lines` lines of `width` characters. */
function notes(ws: string, lines: number, width: number): string[] {
  const files = [0, 1, 2].map((n) => `notes-${n}.txt`);
  files.forEach((file, n) => writeFileSync(path.join(ws, file), `${`notes ${n} `.padEnd(width - 1, '.')}\n`.repeat(lines)));
  return files;
}

test("an agent's history grows with its turns, not with their square: each turn sends only what is new", async () => {
  // On a server that terminates a run past 2 MB: sending the whole conversation each turn, this
  // agent (3 KB read a turn) was terminated at about 40 of its 80 turns.
  const limit = 2 * 1024 * 1024;
  const ws = tempWorkspace();
  const plan = reader(ws, notes(ws, 40, 75), 79);
  await withHistoryLimit(limit, async (h) => {
    const id = (await h.client.start(plan, {}, { workflowId: `chained-${Date.now()}`, taskQueue: h.taskQueue })).workflowId;
    expect((await h.client.result(id)).status).toBe('completed');
    const agent = h.client.client.workflow.getHandle(`${id}/read`);
    const events = (await agent.fetchHistory()).events ?? [];
    const turns = events.flatMap((e) => (e.activityTaskScheduledEventAttributes?.activityType?.name === 'modelTurnChained' ? [e.activityTaskScheduledEventAttributes.input?.payloads?.[0]?.data?.length ?? 0] : []));
    const size = (await agent.describe()).historySize ?? 0;
    console.log(`chained: ${turns.length} turns, inputs ${Math.min(...turns)}-${Math.max(...turns)} bytes, history ${(size / 1024).toFixed(0)} KB`);
    expect(turns).toHaveLength(80);
    // The last turn's conversation holds 79 reads of 3 KB; its input holds the last one and the tools.
    expect(Math.max(...turns)).toBeLessThan(8 * 1024);
    expect(size).toBeLessThan(limit / 2);
  });
}, 240_000);

test('an agent whose conversation outgrows its history stops before Temporal would terminate it, and says why', async () => {
  // A server that terminates a run past 1 MB of history (Temporal's default is 50 MB): 6 KB read a
  // turn, in the tool's result and again in the next turn's input, passes it in about 70 turns.
  const limit = 1024 * 1024;
  const ws = tempWorkspace();
  const plan = reader(ws, notes(ws, 80, 75), 119);
  await withHistoryLimit(limit, async (h) => {
    const start = async (name: string, limits?: { bytes: number }) => (await h.client.start(plan, {}, { workflowId: `${name}-${Date.now()}`, taskQueue: h.taskQueue, ...(limits && { limits }) })).workflowId;
    const agentOf = (id: string) => h.client.client.workflow.getHandle(`${id}/read`).describe();
    // Told the cluster's limit, the agent stops at 85% of it: its step fails with the reason, its workflow ends as failed.
    const told = await start('told', { bytes: limit });
    const result = await h.client.result(told);
    expect(result.status).toBe('failed');
    expect(JSON.stringify(result)).toMatch(/AgentHistoryLimit: the conversation outgrew one workflow history after \d+ model turns: 0\.\d MB of Temporal's 1\.0 MB/);
    const stopped = await agentOf(told);
    expect({ status: stopped.status.name, under: (stopped.historySize ?? limit) < limit }).toEqual({ status: 'FAILED', under: true });
    // The positive control: not told, the same agent reads on until the server terminates it, with no reason given.
    const blind = await start('blind');
    await h.client.result(blind).catch(() => undefined);
    expect((await agentOf(blind)).status.name).toBe('TERMINATED');
  });
}, 240_000);
