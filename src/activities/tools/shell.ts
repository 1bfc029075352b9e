import { stat } from 'node:fs/promises';
import { ARG_MAX, envStrings, execBytes, type ShellParams } from '../../plan-format/tools';
import { toolEnvironment } from '../../sandbox/environment';
import { type PreparedSandbox, SandboxUnavailable, prepareSandbox } from '../../sandbox/executor';
import { type OutputReceivers, type SandboxedProcess, spawnSandboxed } from '../../sandbox/spawn';
import { directoryInside, resolveInside } from '../confinement';
import { ErrorTypes, permanent, transient } from '../../errors/application-failures';
import { CappedBytes, truncation } from './capped';
import type { ToolContext } from './context';
import { spawnTied, WATCHDOG_ARGS, type TiedProcess } from '../../processes/tied-process';

export interface ShellOutput {
  exitCode: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON, when it is JSON and was kept whole. */
  json?: unknown;
  /** Set when a stream was cut at the limit (ctx.limits), with the bytes dropped from each cut stream. */
  truncated?: true;
  droppedBytes?: { stdout?: number; stderr?: number };
}

export async function runShell(params: ShellParams, ctx: ToolContext): Promise<ShellOutput | string> {
  const { profile, secrets } = ctx.sandbox;
  let env: Record<string, string>;
  try {
    env = toolEnvironment({ profile, secrets, extra: { ...params.env, CADRE_STEP: ctx.stepId, CADRE_ATTEMPT: String(ctx.attempt) } });
  } catch (err) {
    throw permanent(ErrorTypes.SandboxConfigInvalid, (err as Error).message);
  }
  const stdout = new CappedBytes(ctx.limits.streamBytes);
  const stderr = new CappedBytes(ctx.limits.streamBytes);
  const output = { stdout: (chunk: Buffer) => stdout.push(chunk), stderr: (chunk: Buffer) => stderr.push(chunk) };
  const started = profile.mode === 'none' ? await unconfined(params, ctx, env, output) : await sandboxed(params, ctx, env, output);
  const kill = () => started.kill();
  ctx.signal.addEventListener('abort', kill, { once: true });
  try {
    const exitCode = await started.finished.catch((err) => {
      throw spawnFailure(err);
    });
    if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error('cancelled');
    const [out, err] = [stdout.finish(), stderr.finish()];
    const result: ShellOutput = { exitCode, stdout: out.text, stderr: err.text, ...truncation({ stdout: out, stderr: err }) };
    const json = out.dropped > 0 ? undefined : parseJson(out.text);
    if (json !== undefined) result.json = json;
    if (exitCode !== 0) {
      // The message is a summary (it is shown, and kept in history); the whole stderr is in the output.
      // Redacted before it is cut: a secret cut in two would no longer be found whole.
      const tail = (ctx.sandbox.redact?.(result.stderr) ?? result.stderr).trim().split('\n').slice(-3).map((line) => (line.length > 300 ? `${line.slice(0, 300)}…` : line)).join(' | ');
      throw transient(ErrorTypes.ShellExit, `command exited with code ${exitCode}${tail ? `: ${tail}` : ''}`, result);
    }
    return ctx.forModel ? forModel(result) : result;
  } finally {
    ctx.signal.removeEventListener('abort', kill);
    await started.done(ctx.signal.aborted);
  }
}

interface Started {
  finished: Promise<number>;
  kill(): void;
  /** After the command: what the call set up goes (a cancelled one is killed first). */
  done(cancelled: boolean): Promise<void>;
}

/** In the sandbox: the workspace (or worktree) is all it can write; see src/sandbox. */
async function sandboxed(params: ShellParams, ctx: ToolContext, env: Record<string, string>, output: OutputReceivers): Promise<Started> {
  const cwd = await resolveInside(ctx.boundary, params.cwd ?? '.', 'cwd');
  if (!(await stat(cwd.path).catch(() => undefined))?.isDirectory()) throw permanent(ErrorTypes.FileNotFound, `no directory ${JSON.stringify(params.cwd)} in the ${ctx.boundary.name}`);
  let prepared: PreparedSandbox;
  try {
    prepared = await prepareSandbox({ argv: ['/bin/sh', '-c', params.command], cwd: cwd.path, writable: [ctx.boundary.root], profile: ctx.sandbox.profile, env, ...(ctx.sandbox.log && { log: ctx.sandbox.log }), ...(ctx.sandbox.lookup && { lookup: ctx.sandbox.lookup }) });
  } catch (err) {
    if (err instanceof SandboxUnavailable) throw permanent(ErrorTypes.SandboxUnavailable, err.message);
    throw err;
  }
  const size = execBytes([prepared.file, ...prepared.args]);
  if (size > ARG_MAX) {
    await prepared.release();
    throw tooBig(`command and environment need ${size} bytes with the sandbox's arguments; a process can be started with at most ${ARG_MAX}`);
  }
  let child: SandboxedProcess;
  try {
    child = spawnSandboxed(prepared, output);
  } catch (err) {
    await prepared.release();
    throw spawnFailure(err);
  }
  return {
    finished: child.finished,
    kill: () => child.kill(),
    done: async (cancelled) => {
      if (cancelled) child.kill();
      await child.finished.catch(() => undefined);
      await prepared.release();
    },
  };
}

/** `sandbox: none`, chosen by people: as the worker's own process, its environment still scrubbed of secrets. */
async function unconfined(params: ShellParams, ctx: ToolContext, env: Record<string, string>, output: OutputReceivers): Promise<Started> {
  const size = execBytes([...WATCHDOG_ARGS, params.command, ...envStrings(env)]);
  if (size > ARG_MAX) throw tooBig(`command and environment, with the worker's own, need ${size} bytes; a process can be started with at most ${ARG_MAX}`);
  // Spawn in the checked directory itself, held open, so nothing swapped in meanwhile is entered.
  const cwd = await directoryInside(ctx.boundary, params.cwd ?? '.', 'cwd');
  let tool: TiedProcess;
  try {
    tool = spawnTied(params.command, { cwd: cwd.path, env, ...output });
  } catch (err) {
    throw spawnFailure(err);
  } finally {
    await cwd.close();
  }
  return {
    finished: tool.finished,
    kill: () => tool.killTree(),
    done: async (cancelled) => (cancelled ? tool.killTree() : tool.release()),
  };
}

function tooBig(reason: string) {
  return permanent(ErrorTypes.BadToolInput, `bad parameters for shell: command, env: ${reason} (pass big data in a file)`);
}

/** Spawn errors that are the input's fault (E2BIG, a NUL byte) are permanent; others (EAGAIN, EMFILE) may pass. */
function spawnFailure(err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'E2BIG') return tooBig('too big to start a process (E2BIG)');
  if (code === 'ERR_INVALID_ARG_VALUE') return permanent(ErrorTypes.BadToolInput, `bad parameters for shell: command, env, cwd: ${(err as Error).message}`);
  return err;
}

function parseJson(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === '' || !/^[[{"\d-]|^(true|false|null)$/.test(trimmed)) return undefined;
  try {
    return JSON.parse(trimmed);
  } catch {
    return undefined;
  }
}

/** A command's outcome as a model reads it best: the exit code and each stream as text, saying that it wrote no file itself. */
function forModel(result: ShellOutput): string {
  const streams = (['stdout', 'stderr'] as const).filter((name) => result[name] !== '').map((name) => `${name}:\n${result[name].replace(/\n$/, '')}`);
  return [
    `exit code ${result.exitCode}${streams.length === 0 ? ', no output' : ''}`,
    ...streams,
    ...(result.droppedBytes ? [`(output cut: ${JSON.stringify(result.droppedBytes)} bytes not kept)`] : []),
    '(The output is only shown here: write it to a file yourself if the task asks for one.)',
  ].join('\n');
}
