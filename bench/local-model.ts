/**
 * Benchmark, opt-in (not in `npm run bench` nor CI): cadre's agents on a real model served on
 * this machine. Ten small agent tasks (bench/local-model-tasks.ts), each a plan with one agent
 * step, on an ephemeral Temporal dev server and a cadre worker whose model is the endpoint
 * `models.compatible.bench` at --url. Each task is judged by its check of the workspace, not by
 * what the model says. Needs no network but the model's server.
 *
 *   npm run bench:local-model -- --url http://127.0.0.1:8080/v1 --model qwen2.5-coder-1.5b-instruct [--tool-calls json]
 *     --tasks summarise,fix-test   only these tasks
 *     --max-turns 12               model turns per task (default 12)
 *     --timeout 30m                each agent step's timeout (default 30m: small models on a CPU are slow)
 *     --api-key-env NAME           the environment variable holding the server's key, if it wants one
 *     --label "llama.cpp b6000, 2 threads"   what served the model, kept in the JSON
 *     --out file.json              default bench/results/local-model.json; each task's transcript goes to
 *                                  file-transcripts/<task>.txt (what the model said and the tools answered)
 *     --peer mini-swe-agent        run the same tasks through mini-swe-agent too (installed into a venv
 *                                  under cadre's cache on first use) and print both columns
 *     --verify                     each step checks its work with the task's verify command (what its
 *                                  prompt states) before its answer is taken, failures sent back
 *     --keep                       keep the tasks' workspaces (their folder is printed)
 *
 * Prints progress on stderr, then the results as a Markdown table (per task: success, how the step
 * ended, turns, tool calls, tokens, seconds; then totals) on stdout, and writes them as JSON.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { TOOL_CALL_MODES, type ToolCallMode, defaultToolCalls, modelSettings } from '../src/providers/config';
import { durationMs, isDuration } from '../src/plan-format/duration';
import { installConciseLogging } from '../src/worker/logging';
import { startBenchWorker } from './bench-worker';
import { TASKS } from './local-model-tasks';
import { runTasks, sideBySide, summary, table, totals } from './local-model-run';
import { PEER_VERSION, runPeerTasks } from './local-model-peer';
import { resultsFile, runMain } from './run-main';

const benchStartMs = Date.now();
function log(line: string): void {
  process.stderr.write(`bench: ${((Date.now() - benchStartMs) / 1000).toFixed(1)}s ${line}\n`);
}

const USAGE = 'usage: npm run bench:local-model -- --url http://127.0.0.1:8080/v1 --model <name> [--tool-calls required|native|json|xml|qwen] [--tasks a,b] [--max-turns 12] [--timeout 30m] [--label text] [--out file] [--peer mini-swe-agent] [--verify] [--keep]';

function options() {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      model: { type: 'string' },
      'tool-calls': { type: 'string' },
      tasks: { type: 'string' },
      'max-turns': { type: 'string', default: '12' },
      timeout: { type: 'string', default: '30m' },
      'api-key-env': { type: 'string' },
      label: { type: 'string' },
      out: { type: 'string' },
      peer: { type: 'string' },
      keep: { type: 'boolean', default: false },
      verify: { type: 'boolean', default: false },
    },
  });
  const fail = (problem: string): never => {
    throw new Error(`${problem}\n${USAGE}`);
  };
  const url = values.url ?? fail('--url is required');
  const model = values.model ?? fail('--model is required (the name the server gives the model)');
  // Unset: the mode cadre gives the endpoint when its config names none (required on this machine).
  const toolCalls = (values['tool-calls'] ?? defaultToolCalls(url)) as ToolCallMode;
  if (!TOOL_CALL_MODES.includes(toolCalls)) fail(`--tool-calls must be one of ${TOOL_CALL_MODES.join(', ')}`);
  const maxTurns = Number(values['max-turns']);
  if (!Number.isInteger(maxTurns) || maxTurns < 1 || maxTurns > 200) fail('--max-turns must be a whole number from 1 to 200');
  if (!isDuration(values.timeout)) fail(`--timeout must be a duration such as 30m, not ${values.timeout}`);
  const wanted = values.tasks?.split(',').map((id) => id.trim()) ?? TASKS.map((t) => t.id);
  const unknown = wanted.filter((id) => !TASKS.some((t) => t.id === id));
  if (unknown.length > 0) fail(`no task ${unknown.join(', ')} (tasks: ${TASKS.map((t) => t.id).join(', ')})`);
  const tasks = TASKS.filter((t) => wanted.includes(t.id));
  const out = values.out ?? resultsFile('local-model');
  if (values.peer !== undefined && values.peer !== 'mini-swe-agent') fail(`--peer can be mini-swe-agent, not ${values.peer}`);
  return { url, model, toolCalls, maxTurns, timeout: values.timeout, tasks, apiKeyEnv: values['api-key-env'], label: values.label, out, transcripts: out.replace(/\.json$/, '') + '-transcripts', peer: values.peer, keep: values.keep, verify: values.verify };
}

async function main(): Promise<void> {
  const opts = options();
  // Failed turns and steps are in the table; the worker's warnings about them would bury it.
  installConciseLogging('ERROR');
  // The worker's settings are the endpoint alone: no cadre.config.yaml or provider key of this machine is read.
  const models = modelSettings({ compatible: { bench: { baseURL: opts.url, model: opts.model, toolCalls: opts.toolCalls, ...(opts.apiKeyEnv && { apiKeyEnv: opts.apiKeyEnv }) } } }, process.env);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'cadre-bench-local-model-'));
  const { server, worker, client, taskQueue, connection } = await startBenchWorker('local-model', tmp, log, { models });
  // A run takes an hour on a CPU: Ctrl-C takes its Temporal server down with it.
  const interrupted = () => {
    log('interrupted: stopping the Temporal server');
    void server.stop().finally(() => process.exit(130));
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  const loadAtStart = os.loadavg()[0];
  const startedAt = new Date().toISOString();
  try {
    log(`${opts.tasks.length} tasks on ${opts.model} at ${opts.url}, toolCalls ${opts.toolCalls}${opts.verify ? ', each step verified by its task\'s command' : ''}`);
    const results = await worker.runUntil(
      runTasks({ client, taskQueue }, { model: 'openai-compatible:bench', tasks: opts.tasks, maxTurns: opts.maxTurns, timeout: opts.timeout, verify: opts.verify, root: path.join(tmp, 'tasks'), transcripts: opts.transcripts, log }),
    );
    const timeoutMs = durationMs(opts.timeout);
    const peer = opts.peer ? await runPeerTasks({ url: opts.url, model: opts.model, tasks: opts.tasks, maxTurns: opts.maxTurns, timeoutMs, root: path.join(tmp, 'peer'), log }) : undefined;
    const report = {
      benchmark: 'local-model',
      model: opts.model,
      url: opts.url,
      toolCalls: opts.toolCalls,
      ...(opts.label && { label: opts.label }),
      maxTurns: opts.maxTurns,
      verify: opts.verify,
      startedAt,
      machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, memoryGiB: Math.round(os.totalmem() / 2 ** 30), loadAverage1m: { atStart: round(loadAtStart), atEnd: round(os.loadavg()[0]), meanOverTasks: round(mean(results.map((r) => r.load))) } },
      totals: totals(results),
      tasks: results,
      ...(peer && { peer: { harness: `mini-swe-agent ${PEER_VERSION}`, totals: totals(peer), tasks: peer } }),
    };
    mkdirSync(path.dirname(opts.out), { recursive: true });
    writeFileSync(opts.out, `${JSON.stringify(report, null, 2)}\n`);
    process.stdout.write(`${peer ? sideBySide(results, peer, 'mini-swe-agent') : table(results)}\n\n${summary(results)}\n${peer ? `${summary(peer, 'mini-swe-agent')}\n` : ''}`);
    log(`results in ${opts.out}`);
  } finally {
    await client.close();
    await connection.close();
    await server.stop();
    if (opts.keep) log(`the tasks' workspaces are in ${path.join(tmp, 'tasks')}`);
    else rmSync(tmp, { recursive: true, force: true });
  }
}

const round = (value: number) => Math.round(value * 10) / 10;
const mean = (values: number[]) => (values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length);

runMain(main, log);
