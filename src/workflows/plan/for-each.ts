/**
 * forEach steps: the action once per item of a list, `concurrency` at a time, results in the
 * list's order; a list of over 1,000 items runs in child workflows (foreach-chunks.ts), where a
 * kind allows it.
 */
import { condition } from '@temporalio/workflow';
import type { ToolResult } from '../../activities';
import { BLOB_THRESHOLD_BYTES, DEFAULT_FOREACH_CONCURRENCY, FOREACH_CHILD_THRESHOLD } from '../../plan-format/limits';
import { type Stored, describeStored, isDeferredRead, isStored } from '../../plan-format/refs';
import { resolveTemplates } from '../../plan-format/templates';
import type { CompiledStep, ForkItems } from '../../plan-format/types';
import { StepFailedError } from '../common/failures';
import { ChunkFailure, ChunkedLoop, type LoopList } from './foreach-chunks';
import { type PlanRunContext, kindOf } from './kinds';
import { DEFAULT_STEP_TIMEOUT } from './step-options';
import { listItems } from '../../plan-format/stored-items';
import type { PlanPatches } from './plan-patches';
import { PATCH_LEAN_ITEMS } from '../../protocol/patches';

/** What forEach needs of its run besides what step kinds get. */
export interface ForEachHost extends PlanRunContext {
  readonly paused: boolean;
  readonly patches: PlanPatches;
  readonly inputs: Record<string, unknown>;
  scope(): Record<string, unknown>;
  stepScope(id: string): unknown;
  runAction(step: CompiledStep, scope: Record<string, unknown>, timeout: string | undefined, label: string): Promise<ToolResult>;
  counted(step: CompiledStep, result: ToolResult): unknown;
}

export class ForEachSteps {
  /** Long loops by step, kept across re-runs of the step. */
  private readonly loops = new Map<string, ChunkedLoop>();
  /** A fork at one item (fork-start.ts): the other items' outputs from the old run, given to the step's first run. */
  readonly restored = new Map<string, ForkItems>();

  constructor(private readonly host: ForEachHost) {}

  setPaused(paused: boolean): void {
    for (const loop of this.loops.values()) loop.setPaused(paused);
  }

  /** Runs the step's action for each item of its list, `concurrency` at a time; results keep the list's order. */
  async run(step: CompiledStep, timeout: string | undefined, results: Map<number, unknown>): Promise<unknown> {
    let list = resolveTemplates(step.forEach, this.host.scope(), this.host.templates);
    if (this.host.hardened && isDeferredRead(list)) list = await this.host.resolveValue(list, BLOB_THRESHOLD_BYTES);
    const items = listItems(list, typeof step.forEach === 'string' ? step.forEach : '');
    if (!items) {
      throw new StepFailedError({ message: `forEach did not give a list (got ${describeValue(list)})`, timedOut: false, attempts: 0 });
    }
    if (this.host.hardened && items.length > FOREACH_CHILD_THRESHOLD && step.worktree) {
      throw new StepFailedError({ message: `a forEach in a worktree runs at most ${FOREACH_CHILD_THRESHOLD} items; this one has ${items.length}`, timedOut: false, attempts: 0 });
    }
    if (items.length > FOREACH_CHILD_THRESHOLD && !kindOf(step.action).chunked) {
      throw new StepFailedError({ message: `a forEach of ${step.action.kind} steps runs at most ${FOREACH_CHILD_THRESHOLD} items; this one has ${items.length}`, timedOut: false, attempts: 0 });
    }
    if (this.host.hardened && items.length > FOREACH_CHILD_THRESHOLD) return this.chunked(step, list, items.length, timeout ?? DEFAULT_STEP_TIMEOUT);
    const restored = this.restored.get(step.id);
    if (restored && restored.outputs.length === items.length) {
      restored.outputs.forEach((output, index) => index !== restored.rerun && results.set(index, output));
      this.restored.delete(step.id);
    }
    const record = this.host.record(step.id);
    record.items = { total: items.length, completed: results.size };
    let next = 0;
    let firstError: unknown;
    // A condition an item is five promises, each with the SDK's recorded stack: wait only while paused.
    const waitAlways = !this.host.patches.has(PATCH_LEAN_ITEMS);
    const lane = async () => {
      while (next < items.length && firstError === undefined) {
        const index = next++;
        if (results.has(index)) continue;
        if (waitAlways || this.host.paused) await condition(() => !this.host.paused);
        try {
          const scope = { ...this.host.scope(), [step.as]: items.at(index), index };
          results.set(index, this.host.counted(step, await this.host.runAction(step, scope, timeout, `${step.id}[${index}]`)));
          record.items = { total: items.length, completed: results.size };
          this.host.changed();
        } catch (err) {
          firstError ??= err;
        }
      }
    };
    const width = Math.min(step.concurrency ?? DEFAULT_FOREACH_CONCURRENCY, items.length);
    await Promise.all(Array.from({ length: width }, lane));
    if (firstError !== undefined) throw firstError;
    return Array.from({ length: items.length }, (_, i) => results.get(i));
  }

  /** A long forEach in child workflows (foreach-chunks.ts); the loop lives on across the step's re-runs. */
  private async chunked(step: CompiledStep, list: unknown, length: number, timeout: string): Promise<unknown> {
    const record = this.host.record(step.id);
    let loop = this.loops.get(step.id);
    if (!loop) {
      loop = new ChunkedLoop(step, {
        plan: this.host.plan.name,
        patches: this.host.patches,
        workspace: this.host.plan.workspace,
        ...this.host.sandbox(),
        ...(this.host.host.route && { route: this.host.host.route }),
        isPaused: () => this.host.paused,
        follow: (workflowId, id) => this.host.agents.follow(workflowId, id),
        progress: (completed, attempts) => {
          record.items = { total: length, completed };
          record.attempts += attempts;
          this.host.changed();
        },
      });
      this.loops.set(step.id, loop);
    }
    record.items = { total: length, completed: record.items?.completed ?? 0 };
    const scope = { steps: Object.fromEntries(step.needs.map((id) => [id, this.host.stepScope(id)])), inputs: this.host.inputs };
    const items: LoopList = Array.isArray(list) ? { values: list } : { list: list as Stored, source: typeof step.forEach === 'string' ? step.forEach : '' };
    try {
      return await loop.run(items, length, scope, timeout, step.concurrency ?? DEFAULT_FOREACH_CONCURRENCY);
    } catch (err) {
      // Attempts were counted as the chunks ended.
      if (err instanceof ChunkFailure) throw new StepFailedError({ ...err.failure, attempts: 0 });
      throw err;
    }
  }
}

function describeValue(value: unknown): string {
  if (isStored(value)) return describeStored(value);
  return value === null ? 'null' : typeof value;
}
