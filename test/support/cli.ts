/** Runs the `cadre` CLI in a child process, as a user would from a shell: bin/cadre.js, compiled by the test run's setup (./build.ts). */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { until } from './until';

const exec = promisify(execFile);
const CADRE = path.join(__dirname, '..', '..', 'bin', 'cadre.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runCadre(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<CliResult> {
  try {
    const { stdout, stderr } = await exec(process.execPath, [CADRE, ...args], { cwd, env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/** A long-running command (`dev`, `worker`, `watch`). */
export function spawnCadre(args: string[], cwd: string, env: NodeJS.ProcessEnv): ChildProcess {
  return spawn(process.execPath, [CADRE, ...args], { cwd, env });
}

/** Resolves with a child's exit code. */
export function exited(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once('exit', (code) => resolve(code)));
}

/** The environment of CLI runs against the test run's dev server. */
export function testServerEnv(): NodeJS.ProcessEnv {
  return { ...process.env, TEMPORAL_ADDRESS: process.env.CADRE_TEST_ADDRESS, CADRE_LOG_LEVEL: 'ERROR' };
}

export interface RunningWorker {
  child: ChildProcess;
  /** What it has written to stderr so far. */
  stderr(): string;
  /** Ctrl-C, then its exit code. */
  stop(): Promise<number | null>;
}

/** `cadre worker` in a child process, returned once it says it runs; a worker that exits first fails the test. */
export async function startCadreWorker(args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 90_000): Promise<RunningWorker> {
  const child = spawnCadre(['worker', ...args], cwd, env);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exit = exited(child);
  await until(
    'cadre worker running',
    () => {
      if (child.exitCode !== null) throw new Error(`cadre worker exited (${child.exitCode}) before it ran: ${stderr}`);
      return stderr.includes('worker running') ? true : undefined;
    },
    timeoutMs,
  );
  return {
    child,
    stderr: () => stderr,
    stop: () => {
      child.kill('SIGINT');
      return exit;
    },
  };
}
