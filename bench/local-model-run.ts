/**
 * Runs the local-model benchmark's tasks (local-model-tasks.ts) as cadre plans, one agent step
 * each, on a worker that polls `taskQueue`; judges each by its check of the workspace. Used by
 * bench/local-model.ts against a real model, and by test/agents.test.ts against the fake server.
 */
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { CadreClient } from '../src/client/client';
import { formatIssues, validatePlan } from '../src/spec/validate';
import { type BenchTask, writeFiles } from './local-model-tasks';

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
  /** Where each task's workspace is made. */
  root: string;
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
    options.log(`${task.id}: ${result.success ? 'success' : 'failure'} (${result.check}), ${result.ended}, ${result.turns} turns, ${result.toolCalls} tool calls, ${result.seconds} s`);
    results.push(result);
  }
  return results;
}

/** One agent step with the task's prompt and tools; its retry would run the whole agent again, so none. */
function taskPlan(task: BenchTask, ws: string, options: TaskRunOptions) {
  const plan = {
    name: `local-model-${task.id}`,
    workspace: ws,
    output: { answer: '{{ steps.agent.output }}' },
    steps: [{ id: 'agent', timeout: options.timeout, retry: { maximumAttempts: 1 }, agent: { prompt: task.prompt, model: options.model, tools: task.tools, maxTurns: options.maxTurns } }],
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
    turns: sum((r) => r.turns),
    toolCalls: sum((r) => r.toolCalls),
    inputTokens: sum((r) => r.inputTokens),
    outputTokens: sum((r) => r.outputTokens),
    seconds: Math.round(sum((r) => r.seconds)),
  };
}

/** The results as a Markdown table, totals last. */
export function table(results: TaskResult[]): string {
  const t = totals(results);
  const rows = results.map((r) => [r.task, r.success ? 'yes' : 'no', r.ended, r.turns, r.toolCalls, r.inputTokens + r.outputTokens, r.seconds.toFixed(0)]);
  rows.push(['**total**', `**${t.succeeded}/${t.tasks}**`, '', t.turns, t.toolCalls, t.inputTokens + t.outputTokens, t.seconds.toFixed(0)]);
  const lines = [['task', 'success', 'ended', 'turns', 'tool calls', 'tokens', 'seconds'], ['---', '---', '---', '---:', '---:', '---:', '---:'], ...rows];
  return lines.map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}
