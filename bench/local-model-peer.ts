/**
 * The local-model benchmark's peer column: the same tasks, prompts, model server and step limit
 * through mini-swe-agent (PyPI `mini-swe-agent`), a public harness that runs a model's bash
 * commands. It is installed into a venv under cadre's cache on first use. Its commands run in its
 * own bubblewrap environment, in each task's folder, with the network off; the same checks of the
 * workspace judge it.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { cacheDir } from '../src/cache-dir';
import { type BenchTask, writeFiles } from './local-model-tasks';
import type { TaskResult } from './local-model-run';

export const PEER_VERSION = '2.4.6';

export interface PeerOptions {
  /** The model server's OpenAI-compatible base URL (…/v1). */
  url: string;
  /** The name the server gives the model. */
  model: string;
  tasks: BenchTask[];
  maxTurns: number;
  timeoutMs: number;
  /** Where each task's workspace (and mini-swe-agent's trajectory beside it) is made. */
  root: string;
  log(line: string): void;
}

/** The venv's `mini`, installed on first use (pip, from PyPI). */
export function ensurePeer(log: (line: string) => void): string {
  const venv = path.join(cacheDir(), `mini-swe-agent-${PEER_VERSION}`);
  const mini = path.join(venv, 'bin', 'mini');
  if (existsSync(mini)) return mini;
  log(`installing mini-swe-agent ${PEER_VERSION} into ${venv} (once; a minute or two)`);
  const run = (command: string, args: string[]) => {
    const result = spawnSync(command, args, { stdio: ['ignore', 'inherit', 'inherit'] });
    if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status}): the peer column needs Python 3.10+ with venv, and PyPI`);
  };
  run('python3', ['-m', 'venv', venv]);
  run(path.join(venv, 'bin', 'pip'), ['install', '--quiet', `mini-swe-agent==${PEER_VERSION}`]);
  return mini;
}

export async function runPeerTasks(options: PeerOptions): Promise<TaskResult[]> {
  const mini = ensurePeer(options.log);
  const results: TaskResult[] = [];
  for (const task of options.tasks) {
    const ws = path.join(options.root, task.id);
    mkdirSync(ws, { recursive: true });
    writeFiles(ws, task.files);
    const trajectory = path.join(options.root, `${task.id}.traj.json`);
    const config = path.join(options.root, `${task.id}.config.yaml`);
    writeFileSync(config, peerConfig(ws, options.maxTurns));
    options.log(`peer ${task.id}: started`);
    const started = performance.now();
    const run = await runMini(mini, task.prompt, { ...options, config, trajectory, cwd: ws });
    const seconds = (performance.now() - started) / 1000;
    const check = task.check(ws);
    const traj = readTrajectory(trajectory);
    const result: TaskResult = {
      task: task.id,
      success: check.ok,
      check: check.detail,
      ended: traj.exitStatus ?? (run.timedOut ? 'TimeExceeded' : `exit ${run.code}`),
      ...(run.code !== 0 && { error: run.stderr.slice(-400) }),
      turns: traj.turns,
      toolCalls: traj.turns,
      inputTokens: traj.inputTokens,
      outputTokens: traj.outputTokens,
      seconds: Math.round(seconds * 10) / 10,
      load: Math.round(os.loadavg()[0] * 10) / 10,
    };
    options.log(`peer ${task.id}: ${result.success ? 'success' : 'failure'} (${result.check}), ${result.ended}, ${result.turns} turns, ${result.seconds} s`);
    results.push(result);
  }
  return results;
}

/**
 * mini-swe-agent's own default config (mini.yaml, tool calls) as a new user runs it, with the
 * benchmark's step limit, greedy sampling and answer cap like cadre's local defaults, no cost limit
 * (a local model has no price), and its bubblewrap environment in the task's folder with the network
 * unshared. (Its text-based config, tried on one task, wrote to the answer cap three turns running
 * and stopped with RepeatedFormatError after 5 minutes.)
 */
function peerConfig(ws: string, maxTurns: number): string {
  const ro = ['/usr', '/bin', '/lib', '/lib64', '/etc'].filter((dir) => existsSync(dir)).flatMap((dir) => ['--ro-bind', dir, dir]);
  const wrapper = ['--unshare-user-try', '--unshare-net', ...ro, '--tmpfs', '/tmp', '--proc', '/proc', '--dev', '/dev', '--new-session', '--setenv', 'PATH', '/usr/local/bin:/usr/sbin:/usr/bin:/bin'];
  return [
    'agent:',
    `  step_limit: ${maxTurns}`,
    '  cost_limit: 0',
    '  mode: yolo',
    'environment:',
    '  environment_class: bubblewrap',
    `  cwd: ${JSON.stringify(ws)}`,
    `  wrapper_args: ${JSON.stringify(wrapper)}`,
    'model:',
    '  model_kwargs:',
    '    temperature: 0',
    // cadre's own cap on a turn's answer at this context (a quarter of it, at most 2,048): unset, a
    // rambling small model writes until the context is full, minutes a turn on a CPU.
    '    max_tokens: 2048',
    '',
  ].join('\n');
}

function runMini(mini: string, task: string, o: PeerOptions & { config: string; trajectory: string; cwd: string }): Promise<{ code: number | null; stderr: string; timedOut: boolean }> {
  const args = ['-m', `openai/${o.model}`, '-t', task, '-y', '--exit-immediately', '-l', '0', '-c', 'mini.yaml', '-c', o.config, '-c', `model.model_kwargs.api_base=${o.url}`, '-o', o.trajectory];
  const env = {
    ...process.env,
    MSWEA_COST_TRACKING: 'ignore_errors',
    LITELLM_LOCAL_MODEL_COST_MAP: 'True',
    MSWEA_SILENT_STARTUP: '1',
    // Its first-run wizard would ask for a model and key on a terminal there is none of.
    MSWEA_CONFIGURED: 'true',
    // litellm's OpenAI client wants a key; the local server ignores it.
    OPENAI_API_KEY: process.env.OPENAI_API_KEY ?? 'local',
    MSWEA_GLOBAL_CONFIG_DIR: path.join(o.root, '.mini-swe-agent'),
  };
  return new Promise((resolve) => {
    const child = spawn(mini, args, { cwd: o.cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-20_000)));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, o.timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, timedOut });
    });
  });
}

/** What the trajectory says: how the run ended, and its model turns and tokens. */
function readTrajectory(file: string): { exitStatus?: string; turns: number; inputTokens: number; outputTokens: number } {
  if (!existsSync(file)) return { turns: 0, inputTokens: 0, outputTokens: 0 };
  const traj = JSON.parse(readFileSync(file, 'utf8')) as {
    info?: { exit_status?: string };
    messages?: { role?: string; extra?: { response?: { usage?: { prompt_tokens?: number; completion_tokens?: number } } } }[];
  };
  // Each model reply keeps its response: a command as the assistant's message, a reply in the wrong
  // format as the user message that tells the model so.
  const turns = (traj.messages ?? []).filter((m) => m.extra?.response !== undefined);
  const usage = (pick: 'prompt_tokens' | 'completion_tokens') => turns.reduce((sum, m) => sum + (m.extra?.response?.usage?.[pick] ?? 0), 0);
  return { exitStatus: traj.info?.exit_status || undefined, turns: turns.length, inputTokens: usage('prompt_tokens'), outputTokens: usage('completion_tokens') };
}
