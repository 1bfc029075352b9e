import { ARG_MAX, envStrings, execBytes, type ShellParams } from '../../spec/tools';
import { directoryInside } from '../confinement';
import { ErrorTypes, permanent, transient } from '../errors';
import { CappedBytes, truncation } from './capped';
import type { ToolContext } from './context';
import { spawnTied, WATCHDOG_ARGS, type TiedProcess } from './tied-process';

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

export async function runShell(params: ShellParams, ctx: ToolContext): Promise<ShellOutput> {
  const env = { ...process.env, ...params.env, CADRE_STEP: ctx.stepId, CADRE_ATTEMPT: String(ctx.attempt) };
  // The schema checked the plan's own command and env; the worker's environment counts too.
  const size = execBytes([...WATCHDOG_ARGS, params.command, ...envStrings(env)]);
  if (size > ARG_MAX) throw tooBig(`command and environment, with the worker's own, need ${size} bytes; a process can be started with at most ${ARG_MAX}`);
  // Spawn in the checked directory itself, held open, so nothing swapped in meanwhile is entered.
  const cwd = await directoryInside(ctx.boundary, params.cwd ?? '.', 'cwd');
  const stdout = new CappedBytes(ctx.limits.streamBytes);
  const stderr = new CappedBytes(ctx.limits.streamBytes);
  let tool: TiedProcess;
  try {
    tool = spawnTied(params.command, { cwd: cwd.path, env, stdout: (chunk) => stdout.push(chunk), stderr: (chunk) => stderr.push(chunk) });
  } catch (err) {
    throw spawnFailure(err);
  } finally {
    await cwd.close();
  }
  const kill = () => tool.killTree();
  ctx.signal.addEventListener('abort', kill, { once: true });
  try {
    const exitCode = await tool.finished.catch((err) => {
      throw spawnFailure(err);
    });
    if (ctx.signal.aborted) throw ctx.signal.reason ?? new Error('cancelled');
    const [out, err] = [stdout.finish(), stderr.finish()];
    const result: ShellOutput = { exitCode, stdout: out.text, stderr: err.text, ...truncation({ stdout: out, stderr: err }) };
    const json = out.dropped > 0 ? undefined : parseJson(out.text);
    if (json !== undefined) result.json = json;
    if (exitCode !== 0) {
      // The message is a summary (it is shown, and kept in history); the whole stderr is in the output.
      const tail = result.stderr.trim().split('\n').slice(-3).map((line) => (line.length > 300 ? `${line.slice(0, 300)}…` : line)).join(' | ');
      throw transient(ErrorTypes.ShellExit, `command exited with code ${exitCode}${tail ? `: ${tail}` : ''}`, result);
    }
    return result;
  } finally {
    ctx.signal.removeEventListener('abort', kill);
    if (ctx.signal.aborted) tool.killTree();
    else tool.release();
  }
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
