/**
 * Runs the local-model benchmark's tasks (local-model-tasks.ts) as cadre plans, one agent step
 * each, on a worker that polls `taskQueue`; judges each by its check of the workspace. Used by
 * bench/local-model.ts against a real model, and by test/agents.test.ts against the fake server.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { CadreClient } from '../src/client/client';
import { formatIssues, validatePlan } from '../src/plan-format/validate';
import { type BenchTask, writeFiles } from './local-model-tasks';
import { agentTranscript } from './transcript';

export interface TaskResult {
  task: string;
  /** The task's check of the workspace passed. */
  success: boolean;
  /** What the check found. */
  check: string;
  /** How the step ended: `completed`, or the error's type (AgentLoopDetected, ToolCallNotParsed, AgentTurnLimit…). */
  ended: string;
  error?: string;
  /** The agent's final answer, clipped: for reading what a failing model said, never for judging. */
  answer?: string;
  turns: number;
  toolCalls: number;
  /** Model replies that did not parse as an offered call (read from the agent's history; cadre's runs only). */
  unparsed?: number;
  inputTokens: number;
  outputTokens: number;
  seconds: number;
  /** The machine's 1-minute load average when the task ended. */
  load: number;
}

export interface TaskRunOptions {
  /** `openai-compatible:<endpoint>`, as a plan names it. */
  model: string;
  tasks: BenchTask[];
  maxTurns: number;
  /** The agent step's timeout (a duration, e.g. 30m). */
  timeout: string;
  /** Each step runs its task's verify command before its answer is taken. */
  verify?: boolean;
  /** Where each task's workspace is made. */
  root: string;
  /** Where to write each task's transcript (`<task>.txt`: the model's turns and the tools' results), if anywhere. */
  transcripts?: string;
  log(line: string): void;
}

export async function runTasks(h: { client: CadreClient; taskQueue: string }, options: TaskRunOptions): Promise<TaskResult[]> {
  const results: TaskResult[] = [];
  for (const task of options.tasks) {
    const ws = path.join(options.root, task.id);
    mkdirSync(ws, { recursive: true });
    writeFiles(ws, task.files);
    options.log(`${task.id}: started`);
    const started = performance.now();
    const { workflowId } = await h.client.start(taskPlan(task, ws, options), {}, { workflowId: `local-model-${task.id}-${process.pid}-${Date.now().toString(36)}`, taskQueue: h.taskQueue });
    const d = await h.client.result(workflowId);
    const seconds = (performance.now() - started) / 1000;
    const step = d.steps.find((s) => s.id === 'agent');
    const check = task.check(ws);
    const output = (d.output as { answer?: unknown } | undefined)?.answer;
    const answer = output === undefined ? undefined : typeof output === 'string' ? output : JSON.stringify(output);
    const error = step?.error ?? (d.status === 'completed' ? undefined : d.errors[0]?.message);
    const result: TaskResult = {
      task: task.id,
      success: check.ok,
      check: check.detail,
      ended: step?.status === 'completed' ? 'completed' : errorType(error) ?? step?.status ?? d.status,
      ...(error !== undefined && { error: clip(error) }),
      ...(answer !== undefined && { answer: clip(answer) }),
      turns: step?.agent?.turns ?? 0,
      toolCalls: step?.agent?.toolCalls ?? 0,
      inputTokens: step?.agent?.usage?.inputTokens ?? 0,
      outputTokens: step?.agent?.usage?.outputTokens ?? 0,
      seconds: Math.round(seconds * 10) / 10,
      load: Math.round(os.loadavg()[0] * 10) / 10,
    };
    const agentId = step?.agent?.workflowId;
    const transcript = agentId === undefined ? undefined : await agentTranscript(h.client.client, agentId);
    if (transcript) result.unparsed = transcript.unparsed;
    if (options.transcripts && transcript) {
      mkdirSync(options.transcripts, { recursive: true });
      writeFileSync(path.join(options.transcripts, `${task.id}.txt`), `${task.prompt}\n${transcript.text}\n--- check: ${result.success ? 'success' : 'failure'} (${result.check})\n`);
    }
    options.log(`${task.id}: ${result.success ? 'success' : 'failure'} (${result.check}), ${result.ended}, ${result.turns} turns, ${result.toolCalls} tool calls, ${result.seconds} s`);
    results.push(result);
  }
  return results;
}

/**
 * One agent step with the task's prompt and tools; its retry would run the whole agent again, so
 * none. Every task asks for a change of the files its prompt names, which the step lists as a plan
 * author would (`mustChange`); with `verify`, the step checks what its prompt states as well.
 */
function taskPlan(task: BenchTask, ws: string, options: TaskRunOptions) {
  const agent = { prompt: task.prompt, model: options.model, tools: task.tools, maxTurns: options.maxTurns, mustChange: task.changes, ...(options.verify && { verify: task.verify }) };
  const plan = {
    name: `local-model-${task.id}`,
    workspace: ws,
    output: { answer: '{{ steps.agent.output }}' },
    steps: [{ id: 'agent', timeout: options.timeout, retry: { maximumAttempts: 1 }, agent }],
  };
  const checked = validatePlan(plan, { baseDir: ws });
  if (!checked.ok) throw new Error(formatIssues(checked.issues));
  return checked.plan;
}

function clip(text: string, max = 400): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** `AgentLoopDetected: the agent called …` → AgentLoopDetected. */
function errorType(error: string | undefined): string | undefined {
  return error?.match(/^([A-Za-z]+):/)?.[1];
}

export interface Totals {
  tasks: number;
  succeeded: number;
  /** Runs that ended `completed` (or Submitted) with the work undone: the model's word taken for the work. */
  silentSuccesses: number;
  /** Model replies that did not parse as an offered call. */
  unparsed: number;
  /** The median task's seconds. */
  medianSeconds: number;
  turns: number;
  toolCalls: number;
  inputTokens: number;
  outputTokens: number;
  seconds: number;
}

export function totals(results: TaskResult[]): Totals {
  const sum = (pick: (r: TaskResult) => number) => results.reduce((total, r) => total + pick(r), 0);
  return {
    tasks: results.length,
    succeeded: results.filter((r) => r.success).length,
    silentSuccesses: results.filter((r) => !r.success && (r.ended === 'completed' || r.ended === 'Submitted')).length,
    unparsed: sum((r) => r.unparsed ?? 0),
    medianSeconds: median(results.map((r) => r.seconds)),
    turns: sum((r) => r.turns),
    toolCalls: sum((r) => r.toolCalls),
    inputTokens: sum((r) => r.inputTokens),
    outputTokens: sum((r) => r.outputTokens),
    seconds: Math.round(sum((r) => r.seconds)),
  };
}

/** cadre's results beside a peer harness's on the same tasks, as a Markdown table: done, how it ended, turns, seconds; totals last. */
export function sideBySide(cadre: TaskResult[], peer: TaskResult[], peerName: string): string {
  const byTask = new Map(peer.map((r) => [r.task, r]));
  const cells = (r: TaskResult | undefined) => (r ? [r.success ? 'yes' : 'no', r.ended, r.turns, r.seconds.toFixed(0)] : ['', '', '', '']);
  const rows = cadre.map((r) => [r.task, ...cells(r), ...cells(byTask.get(r.task))]);
  const total = (results: TaskResult[]) => {
    const t = totals(results);
    return [`**${t.succeeded}/${t.tasks}**`, '', t.turns, t.seconds.toFixed(0)];
  };
  rows.push(['**total**', ...total(cadre), ...total(peer)]);
  const head = ['task', 'cadre: done', 'ended', 'turns', 's', `${peerName}: done`, 'ended', 'turns', 's'];
  const lines = [head, ['---', '---', '---', '---:', '---:', '---', '---', '---:', '---:'], ...rows];
  return lines.map((row) => `| ${row.join(' | ')} |`).join('\n');
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return Math.round((sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2) * 10) / 10;
}

/** A line under a table: what the totals row does not show. */
export function summary(results: TaskResult[], name = 'cadre'): string {
  const t = totals(results);
  const unparsed = results.some((r) => r.unparsed !== undefined) ? `, ${t.unparsed} replies that did not parse` : '';
  return `${name}: ${t.succeeded}/${t.tasks} done, ${t.silentSuccesses} silent successes (completed, work undone)${unparsed}, median task ${t.medianSeconds} s`;
}

/** The results as a Markdown table, totals last. */
export function table(results: TaskResult[]): string {
  const t = totals(results);
  const rows = results.map((r) => [r.task, r.success ? 'yes' : 'no', r.ended, r.turns, r.toolCalls, r.inputTokens + r.outputTokens, r.seconds.toFixed(0)]);
  rows.push(['**total**', `**${t.succeeded}/${t.tasks}**`, '', t.turns, t.toolCalls, t.inputTokens + t.outputTokens, t.seconds.toFixed(0)]);
  const lines = [['task', 'success', 'ended', 'turns', 'tool calls', 'tokens', 'seconds'], ['---', '---', '---', '---:', '---:', '---:', '---:'], ...rows];
  return lines.map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}
