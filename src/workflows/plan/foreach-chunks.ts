/**
 * A long forEach, run in chunks of child workflows (`runItems`), so that a loop of any length
 * keeps every history far under Temporal's limits: the plan run records one child per
 * FOREACH_CHILD_THRESHOLD items, each child at most that many items. The step's concurrency is shared
 * out among the chunks running at once; its output is a stored list made of the chunks' lists.
 * Workflow code.
 */
import type { SandboxSpec } from '../../sandbox/profile';
import { condition, patched, startChild, workflowInfo, type ChildWorkflowHandle } from '@temporalio/workflow';
import { FOREACH_CHILD_THRESHOLD, MAX_ID_BYTES } from '../../plan-format/limits';
import type { Stored, StoredList } from '../../plan-format/refs';
import type { CompiledStep } from '../../plan-format/types';
import type { StepError } from '../common/failures';
import { type ChunkResult, type RunItemsInput, itemsPausedSignal, runItems } from './run-items';
import { sizeOf } from '../common/sizes';
import { storedValues } from './tool-call';
import { PATCH_CHUNK_HOST_WAITS, PATCH_CHUNK_TASK_TIMEOUT, PATCH_HOST_STORED_VALUES } from '../../protocol/patches';
import type { PlanPatches } from './plan-patches';
import type { HostRoute } from '../common/host-route';

/**
 * A chunk's workflow task stays open while its items' local activities run; the SDK completes it
 * (a task "heartbeat") at 80% of the task timeout. At Temporal's default of 10 s that left a busy
 * worker 2 s to answer: on a loaded machine chunks missed it, their tasks timed out, the items run
 * in them ran again and the server waited a minute or more between retries (a 10,000-item loop took
 * over 8 minutes instead of 2). 30 s leaves 6 s; a pause or a cancel reaches a chunk within 24 s.
 */
const CHUNK_TASK_TIMEOUT = '30s';

/** A child's input carries the outputs its items' templates read; past this, their big parts are stored first. */
const MAX_CHILD_SCOPE_BYTES = 256 * 1024;

/** The items of the loop: given values, or a stored list read by index. */
export type LoopList = { values: unknown[] } | { list: Stored; source: string };

export interface ChunkedLoopHost {
  patches: PlanPatches;
  plan: string;
  workspace: string;
  sandbox?: SandboxSpec;
  /** The host the run's workspace is bound to: its chunks' tools go there too. */
  route?: HostRoute;
  isPaused(): boolean;
  /** Shows a running chunk's waits (an unreachable host) as the step's; returns what to call when it ends. */
  follow(workflowId: string, step: string): () => void;
  /** Called whenever a chunk ends: items completed so far, and tool attempts the chunk made. */
  progress(completed: number, attempts: number): void;
}

/** A chunk failed: the first item failure, once every running chunk has stopped. */
export class ChunkFailure extends Error {
  constructor(readonly failure: StepError) {
    super(failure.message);
  }
}

export class ChunkedLoop {
  /** Kept across re-runs of the step (retry, extend): completed items are never run again. */
  private readonly results = new Map<number, ChunkResult>();
  private readonly runs = new Map<number, number>();
  private readonly running = new Set<ChildWorkflowHandle<typeof runItems>>();

  constructor(
    private readonly step: CompiledStep,
    private readonly host: ChunkedLoopHost,
  ) {}

  /** Pauses or resumes the chunks running now (new ones start with the run's pause state). */
  setPaused(paused: boolean): void {
    for (const handle of this.running) void handle.signal(itemsPausedSignal, paused);
  }

  async run(items: LoopList, length: number, scope: Record<string, unknown>, timeout: string, width: number): Promise<StoredList> {
    const chunks = Math.ceil(length / FOREACH_CHILD_THRESHOLD);
    const atOnce = Math.max(1, Math.min(chunks, width));
    const lanes = Math.max(1, Math.floor(width / atOnce));
    const childScope = await this.smallScope(scope);
    let next = 0;
    let failure: StepError | undefined;
    const lane = async () => {
      while (next < chunks && failure === undefined) {
        const chunk = next++;
        const start = chunk * FOREACH_CHILD_THRESHOLD;
        const count = Math.min(FOREACH_CHILD_THRESHOLD, length - start);
        const previous = this.results.get(chunk);
        if (previous && previous.completed === count) continue;
        await condition(() => !this.host.isPaused());
        const input: RunItemsInput = {
          step: this.step,
          workspace: this.host.workspace,
          ...(this.host.sandbox && { sandbox: this.host.sandbox }),
          scope: childScope,
          items: 'values' in items ? { values: items.values.slice(start, start + count) } : items,
          start,
          count,
          lanes,
          timeout,
          paused: false,
          ...(previous && { previous }),
          ...(this.host.route && patched(PATCH_HOST_STORED_VALUES) && this.host.route.chunkInput()),
          ...(this.host.route && patched(PATCH_CHUNK_HOST_WAITS) && { hostWaits: true as const }),
        };
        const result = await this.runChunk(chunk, input);
        this.results.set(chunk, result);
        this.host.progress(this.completed(), result.attempts);
        if (result.failure) failure ??= result.failure;
      }
    };
    await Promise.all(Array.from({ length: atOnce }, lane));
    if (failure) throw new ChunkFailure(failure);
    const parts = Array.from({ length: chunks }, (_, chunk) => (this.results.get(chunk) as ChunkResult).outputs);
    return { $cadre: 'list', parts, length };
  }

  private async runChunk(chunk: number, input: RunItemsInput): Promise<ChunkResult> {
    const handle = await startChild(runItems, {
      args: [input],
      workflowId: this.childId(chunk),
      staticSummary: `${this.host.plan}: ${this.step.id} items ${input.start}–${input.start + input.count - 1}`,
      ...(this.host.patches.has(PATCH_CHUNK_TASK_TIMEOUT) && { workflowTaskTimeout: CHUNK_TASK_TIMEOUT }),
    });
    this.running.add(handle);
    const unfollow = input.hostWaits ? this.host.follow(handle.workflowId, this.step.id) : undefined;
    try {
      // A pause that came while the child was starting.
      if (this.host.isPaused()) void handle.signal(itemsPausedSignal, true);
      return await handle.result();
    } finally {
      this.running.delete(handle);
      unfollow?.();
    }
  }

  /** `<run>/<step>/<chunk>`, `#2` for a chunk's second run; from the run id when the workflow id is too long. */
  private childId(chunk: number): string {
    const runs = (this.runs.get(chunk) ?? 0) + 1;
    this.runs.set(chunk, runs);
    const suffix = `/${this.step.id}/${chunk}${runs === 1 ? '' : `#${runs}`}`;
    const { workflowId, runId } = workflowInfo();
    return workflowId.length + suffix.length <= MAX_ID_BYTES ? `${workflowId}${suffix}` : `${runId}${suffix}`;
  }

  private completed(): number {
    let total = 0;
    for (const result of this.results.values()) total += result.completed;
    return total;
  }

  /** Every child gets what the items' templates read; big parts of it go to the blob store first. */
  private async smallScope(scope: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (sizeOf(scope) <= MAX_CHILD_SCOPE_BYTES) return scope;
    return (await storedValues(this.host.route).resolveValue({ value: scope, workspace: this.host.workspace, inlineLimit: MAX_CHILD_SCOPE_BYTES })) as Record<string, unknown>;
  }
}
