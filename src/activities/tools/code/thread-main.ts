/**
 * The code tools' own thread (./thread.ts starts it): the warm language services live here, and
 * their work (seconds to build one, tens of milliseconds a warm query, all synchronous) never
 * holds up the worker's main thread, where activities, heartbeats and streamed turns run.
 * Requests interleave only where a query awaits (checking its paths); from there it runs to its end
 * without awaiting, so no other request refreshes a service under it, as on the main thread before.
 */
// First: TypeScript through its code cache, before the tools' modules below require it.
import { typescriptLoad } from './typescript-cached';
import { parentPort, threadId } from 'node:worker_threads';
import { ApplicationFailure } from '@temporalio/common';
import type { Boundary } from '../../confinement';
import type { CodeToolContext } from './project';
import { findImplementations, findReferences, navigateImports, traceDataFlow } from './navigate';
import { searchCode } from './search';
import type { CodeReply, CodeRequest, CodeThreadState, CodeTool, ThreadFailure } from './thread-protocol';
import { WARM_LIMITS, evictAll, lastOpenedProgram, openProject, warmProjects } from './warm';
import { indexAhead } from './incoming-calls';
import type ts from 'typescript';

const tools: Record<CodeTool, (params: never, ctx: CodeToolContext) => Promise<unknown>> = {
  'code.navigate_imports': navigateImports,
  'code.find_implementations': findImplementations,
  'code.find_references': findReferences,
  'code.trace_data_flow': traceDataFlow,
  'code.search': searchCode,
};

async function answer(request: CodeRequest): Promise<unknown> {
  switch (request.kind) {
    case 'call':
      return tools[request.tool](request.params as never, { boundary: request.boundary as Boundary });
    case 'warm': {
      const gc = (globalThis as { gc?: () => void }).gc;
      for (let i = 0; request.settle && gc && i < 3; i++) gc();
      return { projects: warmProjects(), heapUsed: process.memoryUsage().heapUsed, threadId, typescript: { cache: typescriptLoad.cache, loadMs: typescriptLoad.loadMs, written: cacheWritten } } satisfies CodeThreadState;
    }
    case 'evict':
      evictAll();
      return undefined;
    case 'prewarm':
      // Speculative: only into a free place, never evicting a service that calls use (twenty agents of a team starting
      // in worktrees of their own would otherwise build twenty and keep four).
      if (warmProjects().length >= WARM_LIMITS.services) return false;
      try {
        openProject(request.boundary, request.boundary.root);
        return true;
      } catch {
        // Not a project TypeScript can analyse, or gone: the first call says why.
        return false;
      }
  }
}

function failureOf(err: unknown): ThreadFailure {
  if (err instanceof ApplicationFailure) return { message: err.message, type: err.type ?? undefined, nonRetryable: err.nonRetryable ?? undefined, details: err.details ?? undefined };
  return { message: err instanceof Error ? err.message : String(err) };
}

/** Whether this thread wrote TypeScript's code cache. */
let cacheWritten = false;

/**
 * Once a service is built: TypeScript's code cache, with what the build compiled, for the next
 * thread. Before the reply, once per TypeScript (a thread that loaded from the cache writes none):
 * the process may end as soon as it has its answer, and the thread with it.
 */
function saveCodeCache(): void {
  // save() writes at most once, and never after a hit.
  if (warmProjects().length > 0) cacheWritten ||= typescriptLoad.save();
}

/**
 * Idle time: the names of the last program's source files are indexed for trace_data_flow, a few
 * milliseconds at a time, so a request that comes meanwhile waits at most one slice.
 */
const INDEX_SLICE_MS = 4;
let indexing: { program: ts.Program; files: readonly ts.SourceFile[]; next: number } | undefined;

function indexInIdleTime(): void {
  const program = lastOpenedProgram();
  if (!program || indexing?.program === program) return;
  const start = indexing === undefined;
  indexing = { program, files: program.getSourceFiles().filter((file) => !file.isDeclarationFile), next: 0 };
  if (start) setImmediate(indexSlice);
}

function indexSlice(): void {
  // A program evicted meanwhile (evictAll) is not worth indexing, nor holding on to.
  if (indexing && indexing.program !== lastOpenedProgram()) indexing = undefined;
  if (!indexing) return;
  indexing.next = indexAhead(indexing.files, indexing.next, INDEX_SLICE_MS);
  if (indexing.next < indexing.files.length) setImmediate(indexSlice);
  else indexing = undefined;
}

const port = parentPort;
if (!port) throw new Error('thread-main.ts runs as the code tools thread (thread.ts starts it)');
const reply = (message: CodeReply) => {
  saveCodeCache();
  port.postMessage(message);
  indexInIdleTime();
};
port.on('message', (request: CodeRequest) => {
  answer(request).then(
    (result) => reply({ id: request.id, result }),
    (err: unknown) => reply({ id: request.id, error: failureOf(err) }),
  );
});
