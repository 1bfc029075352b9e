/**
 * A team never goes deaf (docs/streaming.md, "What a run can take"): a noisy team's moves reach its
 * board without using up the team run's signals; outside readers' polls cannot use up the updates
 * people's answers need; a signal Temporal refuses is never silent.
 *
 * On a dev server whose limits are a twentieth of Temporal's defaults (test/support/limits.ts):
 * twenty workers making 27 moves each against 500 signals a run, as twenty making 500 would against
 * Temporal's 10,000.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { WorkflowUpdateFailedError, WorkflowUpdateStage } from '@temporalio/client';
import YAML from 'yaml';
import { agentDiagnosticsQuery } from '../src/protocol/definitions';
import { runLimitReached } from '../src/client/limit-errors';
import type { StreamEventAt } from '../src/streaming/events';
import { compile, startPlan, tempWorkspace, waitUntil, withWorker } from './support/harness';
import { SIGNALS_LIMIT, allRuns, onServer, lowLimitServers, refused, serverWith, signalsIn, updatesIn } from './support/limits';

const servers = lowLimitServers();

test('a noisy team: twenty workers move often; the board is right at the end and no signal is refused', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-noisy-'));
  const rounds = 12;
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
  // Each: running, blocked and running again each round, completing, completed: 27 moves, 540 in all.
  const moves = 1 + 2 * rounds + 2;
  await onServer(servers.low, servers.models, async (h) => {
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
    expect(runs.reduce((n, run) => n + signalsIn(run), 0)).toBeLessThan(SIGNALS_LIMIT * 0.8);
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
  const full = await serverWith({ 'history.maximumSignalsPerExecution': 12 });
  try {
    const ws = tempWorkspace();
    writeFileSync(path.join(ws, 'notes.txt'), 'the notes');
    const plan = compile(`name: full-run\nsteps:\n  - { id: act, agent: { prompt: "read notes.txt", model: "openai:gpt-4o-mini", tools: [shell, fs.read], approvals: { fs.read: ask } } }\n`, ws);
    servers.models.enqueue(
      { text: 'First a pause. ', toolCalls: [{ id: 's1', name: 'shell', args: { command: 'sleep 3' } }] },
      { text: 'Now reading. ', toolCalls: [{ id: 'r1', name: 'fs_read', args: { path: 'notes.txt' } }] },
      { text: 'The notes say: the notes.' },
    );
    await onServer(full, servers.models, async (h) => {
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
    });
  } finally {
    await full.stop();
  }
}, 180_000);

