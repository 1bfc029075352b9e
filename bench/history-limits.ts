/**
 * Past one history's limits: runs that would break Temporal's per-history limits if cadre kept
 * everything in one history, run end to end on the embedded (tuned) dev server.
 *
 *   - a forEach of 50,000 items (a stored list, in child workflows of 1,000 items);
 *   - 220 steps' worth of 256 KiB outputs (a forEach of 220 shell commands, each printing 256 KiB);
 *   - an agent of 200 model turns, each reading a 3 KB file (scripted): each turn sends only what
 *     is new, so its history grows with its turns; sent whole, it was terminated at 50 MB.
 *
 *   npm run bench        (after plan-overhead; TEMPORAL_ADDRESS=host:port to use an existing server)
 *
 * Prints one JSON object and writes it to bench/results/history-limits.json. Exits 1 when a run
 * does not complete or any of its histories reaches 20,000 events: these are checks, not timings.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import YAML from 'yaml';
import { CadreClient } from '../src/client/client';
import type { CompiledPlan } from '../src/plan-format/types';
import { formatIssues, validatePlan } from '../src/plan-format/validate';
import { resolveServer } from '../src/worker/dev-server';
import { registerSearchAttributes } from '../src/worker/embedded';
import { installConciseLogging } from '../src/worker/logging';
import { resultsFile, runMain, writeResults } from './run-main';
import { scaled } from './scale';
import { createCadreWorker } from '../src/worker/worker';
import { payloadSizes, runHistories } from '../test/support/history';

const LONG_LOOP_ITEMS = scaled(50_000, 8_000);
const BIG_OUTPUTS = scaled(220, 60);
const BIG_OUTPUT_BYTES = 256 * 1024;
const AGENT_TURNS = scaled(200, 60);
/** Lines of 75 characters in each file the agent reads: 3 KB, with fs.read's line numbers a little more. */
const AGENT_READ_LINES = 40;
/** The issue's bound for any one history (Temporal's hard limit is 51,200 events). */
const MAX_EVENTS = 20_000;
const RESULTS_FILE = resultsFile('history-limits');

function log(line: string): void {
  process.stderr.write(`bench: ${line}\n`);
}

function compile(raw: unknown, workspace: string): CompiledPlan {
  const result = validatePlan(raw, { baseDir: workspace });
  if (!result.ok) throw new Error(formatIssues(result.issues));
  return result.plan;
}

interface Histories {
  runs: number;
  largestEvents: number;
  totalEvents: number;
  /** Sum of every payload's bytes in the run's histories (inputs, results, markers). */
  payloadBytes: number;
}

/** The run's history and those of its child workflows (forEach chunks), measured. */
async function histories(client: CadreClient, workflowId: string): Promise<Histories> {
  const all = [...(await runHistories(client.client, workflowId)).values()];
  return {
    runs: all.length,
    largestEvents: Math.max(...all.map((events) => events.length)),
    totalEvents: all.reduce((sum, events) => sum + events.length, 0),
    payloadBytes: payloadSizes(all).reduce((sum, bytes) => sum + bytes, 0),
  };
}

async function runToEnd(client: CadreClient, plan: CompiledPlan, taskQueue: string, name: string) {
  const workflowId = `bench-${name}-${Date.now().toString(36)}`;
  const t0 = performance.now();
  await client.start(plan, {}, { workflowId, taskQueue });
  const d = await client.result(workflowId, { readStored: false });
  const wallMs = Math.round(performance.now() - t0);
  const measured = await histories(client, workflowId);
  log(`${name}: ${d.status} in ${wallMs} ms; ${measured.runs} histories, largest ${measured.largestEvents} events, ${measured.payloadBytes} payload bytes`);
  return { status: d.status, ...(d.reason && { reason: d.reason }), wallMs, ...measured };
}

/** The long agent's run, with its history's bytes a turn: flat when each turn sends only what is new. */
async function agentToEnd(client: CadreClient, plan: CompiledPlan, taskQueue: string) {
  const run = await runToEnd(client, plan, taskQueue, 'long-agent');
  return { turns: AGENT_TURNS, readBytesEach: AGENT_READ_LINES * 75, ...run, payloadBytesPerTurn: Math.round(run.payloadBytes / AGENT_TURNS) };
}

async function main(): Promise<void> {
  // Chunks of local activities hold workflow tasks open for seconds, which the SDK warns about: expected here.
  installConciseLogging('ERROR');
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'cadre-bench-limits-'));
  const workspace = path.join(tmp, 'workspace');
  mkdirSync(workspace);
  writeFileSync(path.join(workspace, 'noop.txt'), 'ok');
  writeFileSync(path.join(workspace, 'list.js'), `process.stdout.write(JSON.stringify(Array.from({ length: ${LONG_LOOP_ITEMS} }, (_, i) => i)));`);
  // Each output distinct, so the content-addressed store holds 220 blobs, not one.
  writeFileSync(path.join(workspace, 'big.js'), `process.stdout.write(String(process.argv[2]).padEnd(${BIG_OUTPUT_BYTES}, '.'));`);

  // Three files in turn: the same call again and again would be stopped as a loop.
  for (const n of [0, 1, 2]) writeFileSync(path.join(workspace, `notes-${n}.txt`), `${`notes ${n} `.padEnd(74, '.')}\n`.repeat(AGENT_READ_LINES));
  const read = (i: number) => ({ reply: { toolCalls: [{ name: 'fs_read', args: { path: `notes-${i % 3}.txt` } }] } });
  writeFileSync(path.join(workspace, 'reader.yaml'), YAML.stringify({ turns: [...Array.from({ length: AGENT_TURNS - 1 }, (_, i) => read(i)), { reply: { text: 'done' } }] }));

  log('starting the Temporal server...');
  const server = await resolveServer({ dataDir: path.join(tmp, 'server'), ephemeral: true, log });
  try {
    await registerSearchAttributes(server, log);
    const taskQueue = `bench-limits-${process.pid}`;
    log('starting a worker (bundling workflows)...');
    const { worker, connection } = await createCadreWorker({ address: server.address, namespace: server.namespace, taskQueue });
    const client = await CadreClient.connect({ address: server.address, namespace: server.namespace });
    const longLoop = compile(
      {
        name: 'bench-long-loop',
        steps: [
          { id: 'list', tool: 'shell', with: { command: 'node list.js' } },
          { id: 'loop', forEach: '{{ steps.list.output.json }}', concurrency: 50, tool: 'fs.read', with: { path: 'noop.txt' } },
        ],
        output: { last: `{{ steps.loop.output[${LONG_LOOP_ITEMS - 1}].content }}` },
      },
      workspace,
    );
    const bigOutputs = compile(
      {
        name: 'bench-big-outputs',
        steps: [
          { id: 'items', tool: 'shell', with: { command: `node -e 'console.log(JSON.stringify(Array.from({length: ${BIG_OUTPUTS}}, (_, i) => i)))'` } },
          { id: 'big', forEach: '{{ steps.items.output.json }}', tool: 'shell', with: { command: 'node big.js {{ item }}' } },
        ],
        output: { first: '{{ steps.big.output[0].stdout }}' },
      },
      workspace,
    );
    const longAgent = compile(
      { name: 'bench-long-agent', steps: [{ id: 'read', agent: { prompt: 'read the notes again and again', model: `scripted:${path.join(workspace, 'reader.yaml')}`, tools: ['fs.read'], maxTurns: AGENT_TURNS } }] },
      workspace,
    );
    let report: Record<string, unknown> = {};
    try {
      report = await worker.runUntil(async () => ({
        longLoop: { items: LONG_LOOP_ITEMS, ...(await runToEnd(client, longLoop, taskQueue, 'long-loop')) },
        bigOutputs: { outputs: BIG_OUTPUTS, bytesEach: BIG_OUTPUT_BYTES, ...(await runToEnd(client, bigOutputs, taskQueue, 'big-outputs')) },
        longAgent: await agentToEnd(client, longAgent, taskQueue),
      }));
    } finally {
      await client.close();
      await connection.close();
    }
    const runs = Object.values(report) as { status: string; largestEvents: number }[];
    const ok = runs.every((r) => r.status === 'completed' && r.largestEvents < MAX_EVENTS);
    writeResults(RESULTS_FILE, { ...report, maxEventsAllowed: MAX_EVENTS, ok, date: new Date().toISOString() });
    if (!ok) throw new Error(`a run did not complete, or a history reached ${MAX_EVENTS} events`);
  } finally {
    await server.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

runMain(main, log);
