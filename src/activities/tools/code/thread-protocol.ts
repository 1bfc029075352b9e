/** What the worker's main thread and the code tools' thread (thread.ts, thread-main.ts) send each other. */
import type { Boundary } from '../../confinement';
import type { CodeCacheUse } from './compile-cache';

export type CodeTool = 'code.navigate_imports' | 'code.find_implementations' | 'code.find_references' | 'code.trace_data_flow' | 'code.search';

export type CodeRequest =
  | { id: number; kind: 'call'; tool: CodeTool; params: unknown; boundary: Boundary }
  /** What is kept warm, and the thread's heap (after collecting its garbage, with `settle`, when it can): for the benchmark and tests. */
  | { id: number; kind: 'warm'; settle?: boolean }
  | { id: number; kind: 'evict' }
  /** Builds the workspace's service ahead of its first call (an agent with code tools starting); answers whether it could. */
  | { id: number; kind: 'prewarm'; boundary: Boundary };

/** An error thrown in the thread, as the activity rethrows it (an ApplicationFailure keeps its type and retry). */
export interface ThreadFailure {
  message: string;
  type?: string;
  nonRetryable?: boolean;
  details?: unknown[];
}

/** What the thread keeps warm, its heap and its id (for the benchmark and tests). */
export interface CodeThreadState {
  projects: { root: string; files: number; sourceChars: number }[];
  heapUsed: number;
  threadId: number;
  /** How the thread loaded TypeScript (./compile-cache.ts), and whether it wrote its cache since (after its first build). */
  typescript: { cache: CodeCacheUse; loadMs: number; written: boolean };
}

export type CodeReply = { id: number; result: unknown } | { id: number; error: ThreadFailure };
