/**
 * The code tools run in a thread of their own (thread-main.ts), started on the first call: building
 * a language service takes seconds of synchronous work, a warm query tens of milliseconds, and on
 * the main thread both held up every activity, heartbeat and streamed turn of the worker. The
 * thread's heap is bounded apart from the worker's (CODE_THREAD): a project too big for it
 * fails its calls (TooLarge), not the worker. When the thread ends, the calls waiting on it fail and
 * the next call starts another, cold. It does not keep the process alive when idle, and ends after
 * CODE_THREAD.idleMs without a call.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { ApplicationFailure } from '@temporalio/common';
import { ErrorTypes, permanent } from '../../../errors/application-failures';
import type { Boundary } from '../../confinement';
import type { ToolContext } from '../context';
import type { CodeReply, CodeRequest, CodeThreadState, CodeTool, ThreadFailure } from './thread-protocol';

export type { CodeThreadState } from './thread-protocol';

/**
 * heapMb: the thread's old-generation heap, four warm services of the largest size warm.ts keeps
 * (8 M characters, ~0.5 GB) and room to build one. idleMs: a thread no call has used that long ends,
 * giving back TypeScript and its isolate (its services, idle as long, are evicted by then). Tests lower them.
 */
export const CODE_THREAD = { heapMb: 2048, idleMs: 10 * 60_000 };

type Request = CodeRequest extends infer R ? (R extends CodeRequest ? Omit<R, 'id'> : never) : never;

interface Pending {
  resolve: (value: unknown) => void;
  reject: (err: unknown) => void;
}

let thread: { worker: Worker; pending: Map<number, Pending>; idle?: NodeJS.Timeout } | undefined;
let nextId = 0;

/** A tool handler that runs `tool` in the code thread with the step's workspace. */
export function inCodeThread(tool: CodeTool) {
  return (params: unknown, ctx: Pick<ToolContext, 'boundary' | 'signal'>) => ask({ kind: 'call', tool, params, boundary: ctx.boundary }, ctx.signal);
}

/** Starts the thread ahead of a first call (an agent with code tools starting): TypeScript loads meanwhile, off the main thread. */
export function startCodeThread(): void {
  thread ??= start();
}

/**
 * Builds the service of a workspace in the thread ahead of its first call: an agent with code tools
 * starting, whose model's first turn usually takes longer than the build. A call that comes sooner
 * waits for the rest of it, as it would have built it. Only into a free place among the services
 * kept (WARM_LIMITS): it evicts none. Failures are left for that call to report.
 */
export function prewarmCodeThread(boundary: Boundary): Promise<boolean> {
  return (ask({ kind: 'prewarm', boundary }) as Promise<boolean>).catch(() => false);
}

/** Whether the thread is up (or starting). */
export function codeThreadStarted(): boolean {
  return thread !== undefined;
}

/** What the thread keeps warm; `settle` collects its garbage first when it can (run with --expose-gc). */
export function codeThreadState(settle = false): Promise<CodeThreadState> {
  return ask({ kind: 'warm', settle }) as Promise<CodeThreadState>;
}

/** Drops the thread's warm services (the benchmark's memory figure, tests). */
export async function evictCodeThread(): Promise<void> {
  if (thread) await ask({ kind: 'evict' });
}

/** Ends the thread: the calls waiting on it fail, the next call starts another. */
export async function stopCodeThread(): Promise<void> {
  const current = thread;
  thread = undefined;
  await current?.worker.terminate();
}

function ask(request: Request, signal?: AbortSignal): Promise<unknown> {
  const current = thread ?? start();
  const id = nextId++;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    // A cancelled step stops waiting; the thread finishes the query (synchronous work cannot be cut) and its answer is dropped.
    const onAbort = () => settle(() => reject(signal?.reason));
    const settle = (finish: () => void) => {
      if (!current.pending.delete(id)) return;
      signal?.removeEventListener('abort', onAbort);
      if (current.pending.size === 0) idleFrom(current);
      finish();
    };
    clearTimeout(current.idle);
    current.pending.set(id, { resolve: (value) => settle(() => resolve(value)), reject: (err) => settle(() => reject(err)) });
    signal?.addEventListener('abort', onAbort, { once: true });
    // Kept alive while a call waits on it, not after.
    current.worker.ref();
    current.worker.postMessage({ ...request, id } as CodeRequest);
  });
}

/** Lets the process exit without it, and ends it when no call comes for CODE_THREAD.idleMs. */
function idleFrom(current: NonNullable<typeof thread>): void {
  current.worker.unref();
  clearTimeout(current.idle);
  current.idle = setTimeout(() => {
    if (current.pending.size > 0) return;
    if (thread === current) thread = undefined;
    void current.worker.terminate();
  }, CODE_THREAD.idleMs);
  current.idle.unref();
}

function start(): NonNullable<typeof thread> {
  const worker = spawn();
  const started = { worker, pending: new Map<number, Pending>() };
  thread = started;
  worker.on('message', (reply: CodeReply) => {
    const waiting = started.pending.get(reply.id);
    if (!waiting) return;
    if ('error' in reply) waiting.reject(rebuilt(reply.error));
    else waiting.resolve(reply.result);
  });
  const fail = (err: Error) => {
    if (thread === started) thread = undefined;
    for (const waiting of [...started.pending.values()]) waiting.reject(err);
  };
  worker.on('error', (err) => fail(ended(err)));
  worker.on('exit', (code) => fail(ended(new Error(`it exited with code ${code}`))));
  idleFrom(started);
  return started;
}

/** Compiled (dist/), the thread runs thread-main.js; from TypeScript sources (tests, `tsx`), it loads them through tsx. */
function spawn(): Worker {
  // The environment as the process has it now (CADRE_CACHE_DIR: where TypeScript's code cache is), named since a test runner's may be its own.
  const options = { resourceLimits: { maxOldGenerationSizeMb: CODE_THREAD.heapMb }, stdout: false, stderr: false, env: process.env };
  const compiled = path.join(__dirname, 'thread-main.js');
  if (existsSync(compiled)) return new Worker(compiled, options);
  // Resolved here: the thread's own require would look from the process's working directory.
  const loader = require.resolve('tsx/cjs');
  const source = path.join(__dirname, 'thread-main.ts');
  return new Worker(`require(${JSON.stringify(loader)}); require(${JSON.stringify(source)});`, { ...options, eval: true });
}

function rebuilt(failure: ThreadFailure): Error {
  if (failure.type === undefined) return new Error(failure.message);
  return ApplicationFailure.create({ message: failure.message, type: failure.type, nonRetryable: failure.nonRetryable ?? false, details: failure.details });
}

/** The thread ended under the calls waiting on it: out of memory, the project is too big for it (not retried); otherwise retried, on a new thread. */
function ended(err: Error): Error {
  if ((err as NodeJS.ErrnoException).code === 'ERR_WORKER_OUT_OF_MEMORY') {
    return permanent(ErrorTypes.TooLarge, `the code tools ran out of their thread's ${CODE_THREAD.heapMb} MB heap: point dir at a part of the project`);
  }
  return new Error(`the code tools' thread ended: ${err.message}`);
}
