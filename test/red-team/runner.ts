/**
 * Runs red-team cases through real agent runs: a plan with one agent step, a fake model (a real
 * HTTP server) that asks for every case's tool call at once in one turn (later turns for cases
 * that must come after others), then answers. The next request the model gets carries every
 * result; those, the run's histories and its blob store are what the cases are judged on.
 */
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { CadreClient } from '../../src/client/client';
import { modelSettings } from '../../src/providers/config';
import type { ActivityDeps } from '../../src/activities';
import type { Diagnostics } from '../../src/protocol/definitions';
import { type FakeModelServer, type FakeResponse, type RecordedRequest, startFakeModelServer } from '../support/fake-model-server';
import { type Harness, compile, startWorker, tempWorkspace, uniqueId } from '../support/harness';
import { type Case, type CaseVerdict, type Evidence, type ToolOutcome, clip } from './cases';
import { type HistoryTexts, blobStore, historyTexts, leaks } from './evidence';

/** What a batch's plan says besides its agent's calls. */
export interface BatchSpec {
  name: string;
  cases: Case[];
  /** Built-in tools offered (cadre's names); default shell, fs.read, fs.write, http.request. */
  tools?: string[];
  /** The plan's `sandbox:` and `egress:` sections, as YAML values. */
  sandbox?: unknown;
  egress?: unknown;
  approvals?: unknown;
  approvalTimeout?: string;
  /** The step's worktree (`{ repo, cleanup }`): cases run in it. */
  worktree?: { repo: string; task?: string; cleanup?: string };
  timeout?: string;
  /** The plan's workspace; a fresh temporary one when absent. */
  workspace?: string;
  /**
   * Make `.git` and `.cadre` (empty) before the run: calls then meet existing directories bound
   * read-only, rather than the placeholders a workspace without them gets.
   */
  premade?: boolean;
  /** Host-side preparation of the workspace before the run. */
  setup?(workspace: string): void | Promise<void>;
  /** Called once the model has asked for the first turn's calls (they are being run). */
  whileRunning?(workflowId: string): Promise<void>;
  /** The status the run must end with; default completed. */
  expect?: 'completed' | 'failed';
}

export interface BatchResult {
  workflowId: string;
  diagnostics: Diagnostics;
  verdicts: CaseVerdict[];
  /** The run's histories, grouped by tool activity. */
  history: HistoryTexts;
  /** The plan workspace's blob store: file → text. */
  blobs: Map<string, string>;
  workspace: string;
  /** Milliseconds from start to end of the run. */
  durationMs: number;
}

interface Script {
  turns: Case[][];
  firstTurnAsked: () => void;
}

export interface RedTeamWorker {
  harness: Harness;
  model: FakeModelServer;
  /** The fake provider's key: a secret the worker holds (it sits in the worker's environment too). */
  modelKey: string;
  run(spec: BatchSpec): Promise<BatchResult>;
  close(): Promise<void>;
}

/**
 * One worker and one fake model for all batches of a file. The worker reads its secrets from its
 * environment on the first tool call: set them before. `secrets` (name → value) are what no case
 * may bring out, whatever it attacks.
 */
export async function startRedTeamWorker(options: { deps?: ActivityDeps; modelKey: string; secrets?: Record<string, string> }): Promise<RedTeamWorker> {
  const scripts = new Map<string, Script>();
  // Workspaces it made (some hold files of many MiB): removed on close.
  const made: string[] = [];
  const model = await startFakeModelServer({ respond: (body) => reply(scripts, body) });
  const deps: ActivityDeps = { ...options.deps, models: modelSettings({}, { OPENAI_API_KEY: options.modelKey, OPENAI_BASE_URL: model.baseURL }) };
  const taskQueue = uniqueId('red-team');
  let worker: Worker;
  let connection: NativeConnection;
  try {
    ({ worker, connection } = await startWorker(taskQueue, { activityDeps: deps }));
  } catch (err) {
    await model.close();
    throw err;
  }
  const running = worker.run();
  const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
  const harness: Harness = { client, taskQueue };
  return {
    harness,
    model,
    modelKey: options.modelKey,
    run: (spec) => {
      const workspace = spec.workspace ?? tempWorkspace();
      if (spec.workspace === undefined) made.push(workspace);
      return runBatch(harness, model, scripts, { ...spec, workspace }, options.secrets ?? {});
    },
    close: async () => {
      for (const dir of made) rmSync(dir, { recursive: true, force: true });
      worker.shutdown();
      await running.catch(() => undefined);
      await client.close();
      await connection.close();
      await model.close();
    },
  };
}

function tokenOf(body: Record<string, unknown>): string | undefined {
  const messages = (body.messages ?? []) as { role: string; content?: unknown }[];
  const prompt = messages.find((m) => m.role === 'user');
  return /red-team run (\S+)/.exec(typeof prompt?.content === 'string' ? prompt.content : JSON.stringify(prompt?.content ?? ''))?.[1];
}

/** Turn n (the n-th request of a run) asks for the calls of turn n; after the last, a final answer. */
function reply(scripts: Map<string, Script>, body: Record<string, unknown>): FakeResponse {
  const token = tokenOf(body);
  const script = token === undefined ? undefined : scripts.get(token);
  if (!script) return { status: 500, body: { error: { message: 'red team: no script for this request' } } };
  const turn = ((body.messages ?? []) as { role: string }[]).filter((m) => m.role === 'assistant').length;
  if (turn === 0) script.firstTurnAsked();
  const calls = script.turns[turn];
  if (!calls) return { text: 'done' };
  return { toolCalls: calls.map((c) => ({ id: c.id, name: c.call.name, args: c.call.args })) };
}

function planYaml(spec: BatchSpec, token: string, turns: number): string {
  const agent: Record<string, unknown> = {
    prompt: `red-team run ${token}`,
    model: 'openai:gpt-4o-mini',
    tools: spec.tools ?? ['shell', 'fs.read', 'fs.write', 'http.request'],
    maxTurns: turns + 2,
    ...(spec.approvals !== undefined && { approvals: spec.approvals }),
    ...(spec.approvalTimeout && { approvalTimeout: spec.approvalTimeout }),
  };
  const step: Record<string, unknown> = { id: 'attack', agent, ...(spec.timeout && { timeout: spec.timeout }), ...(spec.worktree && { worktree: spec.worktree }) };
  const plan: Record<string, unknown> = {
    name: spec.name,
    ...(spec.sandbox !== undefined && { sandbox: spec.sandbox }),
    ...(spec.egress !== undefined && { egress: spec.egress }),
    steps: [step],
  };
  return YAML.stringify(plan);
}

/** The tool messages of a run's last model request, by call id. */
function toolMessages(requests: RecordedRequest[], token: string): Map<string, string> {
  const mine = requests.filter((r) => tokenOf(r.body) === token);
  const last = mine[mine.length - 1];
  const messages = (last?.body.messages ?? []) as { role: string; content?: unknown; tool_call_id?: string }[];
  return new Map(messages.filter((m) => m.role === 'tool').map((m) => [String(m.tool_call_id), typeof m.content === 'string' ? m.content : JSON.stringify(m.content)]));
}

export function outcomeOf(text: string | undefined): ToolOutcome {
  if (text === undefined) return { text: '', missing: true };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const shell = json && typeof json === 'object' && 'exitCode' in json && 'stdout' in json ? (json as ToolOutcome['shell']) : shellView(text);
  return { text, ...(json !== undefined && { json }), ...(shell && { shell }) };
}

/**
 * A shell result as an agent's model reads it (activities/tools/shell.ts): `exit code N`, then
 * `stdout:` and `stderr:` sections when not empty, then a closing note in parentheses.
 */
function shellView(text: string): ToolOutcome['shell'] {
  const whole = /^exit code (\d+)(?:, no output)?\n([\s\S]*?)\(The output is only shown here[^\n]*\)$/.exec(text);
  if (!whole) return undefined;
  const body = whole[2];
  const errAt = body.search(/(^|\n)stderr:\n/);
  const outPart = errAt < 0 ? body : body.slice(0, errAt);
  const errPart = errAt < 0 ? '' : body.slice(errAt).replace(/^\n?stderr:\n/, '');
  const section = (part: string, name: string) => (part.startsWith(`${name}:\n`) ? part.slice(name.length + 2) : '');
  return { exitCode: Number(whole[1]), stdout: section(outPart, 'stdout'), stderr: errPart };
}

/** Every case, whatever it attacks, also must not bring any of the worker's `secrets` out. */
async function runBatch(h: Harness, model: FakeModelServer, scripts: Map<string, Script>, spec: BatchSpec, secrets: Record<string, string>): Promise<BatchResult> {
  const ids = new Set<string>();
  for (const c of spec.cases) {
    if (ids.has(c.id)) throw new Error(`two cases named ${c.id}`);
    ids.add(c.id);
  }
  const workspace = spec.workspace ?? tempWorkspace();
  if (spec.premade) for (const name of ['.git', '.cadre']) mkdirSync(path.join(workspace, name), { recursive: true });
  await spec.setup?.(workspace);
  const token = uniqueId(spec.name);
  const turnCount = Math.max(1, ...spec.cases.map((c) => c.turn ?? 1));
  const turns: Case[][] = Array.from({ length: turnCount }, (_, i) => spec.cases.filter((c) => (c.turn ?? 1) === i + 1));
  let asked!: () => void;
  const firstTurn = new Promise<void>((resolve) => (asked = resolve));
  scripts.set(token, { turns, firstTurnAsked: () => asked() });
  const plan = compile(planYaml(spec, token, turnCount), workspace);
  const started = Date.now();
  const { workflowId } = await h.client.start(plan, {}, { workflowId: token, taskQueue: h.taskQueue });
  // Settles to its error (if any), so a failure meanwhile is not unhandled before the run ends.
  const during = spec.whileRunning ? firstTurn.then(() => spec.whileRunning!(workflowId)).then(() => undefined, (err: unknown) => err) : Promise.resolve(undefined);
  const diagnostics = await h.client.result(workflowId, { readStored: false });
  const durationMs = Date.now() - started;
  // RED_TEAM_TIMES=1: each batch's time, to see where the suite's goes.
  if (process.env.RED_TEAM_TIMES) process.stdout.write(`red-team: batch ${spec.name}: ${spec.cases.length} calls, ${durationMs} ms\n`);
  const failedMeanwhile = await during;
  scripts.delete(token);
  if (failedMeanwhile) throw failedMeanwhile;
  const wanted = spec.expect ?? 'completed';
  if (diagnostics.status !== wanted) throw new Error(`red-team batch ${spec.name}: the run ended ${diagnostics.status} (${diagnostics.reason ?? ''}), not ${wanted}`);

  const messages = toolMessages(model.requests, token);
  const blobs = blobStore(workspace);
  const history = await historyTexts(h.client.client, workflowId);
  const where = spec.worktree ? worktreeOf(diagnostics) ?? workspace : workspace;
  const verdicts: CaseVerdict[] = [];
  for (const c of spec.cases) {
    const outcome = outcomeOf(messages.get(c.id));
    const ran = c.ran(outcome);
    const ctx = { outcome, evidence: evidenceOf(c, turns, history, blobs), workspace: where };
    let escapes: string[];
    try {
      escapes = [...new Set([...(await c.escapes(ctx)), ...leaks(ctx, secrets)])];
    } catch (err) {
      escapes = [`the containment check failed: ${(err as Error).message}`];
    }
    verdicts.push({ id: c.id, category: c.category, title: c.title, ran, escapes, said: clip(outcome.missing ? '(no result reached the model)' : outcome.text) });
  }
  return { workflowId, diagnostics, verdicts, history, blobs, workspace, durationMs };
}

/** A case's own tool activity (`attack/<turn>.<index>`, and its recovery retry) and the blobs its events name. */
function evidenceOf(c: Case, turns: Case[][], history: HistoryTexts, blobs: Map<string, string>): Evidence {
  const turn = c.turn ?? 1;
  const activity = `attack/${turn}.${turns[turn - 1].indexOf(c) + 1}`;
  const own = [history.byActivity.get(activity), history.byActivity.get(`${activity}.retry`)].filter((t) => t !== undefined).join('\n');
  const named = [...blobs].filter(([file]) => own.includes(path.basename(file, '.json'))).map(([, text]) => text);
  return { history: own, blobs: named.join('\n') };
}

function worktreeOf(d: Diagnostics): string | undefined {
  const found = d.worktrees?.find((w) => w.path);
  return found?.path ? path.resolve(found.path) : undefined;
}
