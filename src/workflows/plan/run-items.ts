/**
 * `runItems`: a chunk of a long forEach, run as a child workflow of its plan run so that no
 * single history holds every item (see foreach-chunks.ts). It runs the step's tool for each item,
 * `lanes` at a time, stops starting items at the first failure, and returns its items' outputs
 * stored as one list: the parent's history holds a reference per chunk, not an output per item.
 */
import type { SandboxSpec } from '../../sandbox/profile';
import { ApplicationFailure, TemporalFailure, condition, defineSignal, getExternalWorkflowHandle, isCancellation, patched, setHandler, workflowInfo } from '@temporalio/workflow';
import type { Stored, StoredRef } from '../../plan-format/refs';
import { hasDeferred } from '../../plan-format/refs';
import { resolveTemplates } from '../../plan-format/templates';
import type { CompiledStep } from '../../plan-format/types';
import { describeFailure, type StepError } from '../common/failures';
import { runsLocally } from './step-options';
import { listItems } from '../../plan-format/stored-items';
import { ActivityIds, callTool, durableSleep, storedValues } from './tool-call';
import { checkInput, count, flag, map, shape, text } from '../../protocol/input-checks';
import { type Waiting, agentWaitsSignal, hostMovedSignal } from '../../protocol/definitions';
import { HostRoute } from '../common/host-route';
import { PATCH_LEAN_ITEMS } from '../../protocol/patches';

/** Item outputs bigger than this go to the blob store at once, so a chunk's own history stays small. */
export const ITEM_INLINE_BYTES = 1024;

export interface RunItemsInput {
  step: CompiledStep;
  workspace: string;
  sandbox?: SandboxSpec;
  /** What the step's templates read besides the item: the outputs of the steps it needs, and the inputs. */
  scope: Record<string, unknown>;
  /** This chunk's items as values, or the stored list they are read from (by global index). */
  items: { values: unknown[] } | { list: Stored; source: string };
  /** Global index of the chunk's first item, and how many items it has. */
  start: number;
  count: number;
  lanes: number;
  timeout: string;
  paused: boolean;
  /** What an earlier run of this chunk completed: those items are not run again. */
  previous?: ChunkResult;
  /** The host its run's workspace is bound to (a fleet), as the run's route says (common/host-route.ts). */
  hostQueue?: string;
  hostLostAfterMs?: number;
  hostSolo?: true;
  /** Tell the run when the host is unreachable and when that ends (runs since chunk-host-waits). */
  hostWaits?: true;
}

export interface ChunkResult {
  /** The chunk's outputs as a stored list of `count` entries (null for items not completed). */
  outputs: StoredRef;
  /** '1' for each item completed, '0' for the others. */
  done: string;
  completed: number;
  /** Tool attempts made by this run of the chunk. */
  attempts: number;
  failure?: StepError;
}

/** The parent pauses and resumes its running chunks with this. */
export const itemsPausedSignal = defineSignal<[boolean]>('itemsPaused');

const RUN_ITEMS_INPUT = shape({
  step: shape({ id: text, action: map }),
  workspace: text,
  scope: map,
  items: map,
  start: count,
  count,
  lanes: count,
  timeout: text,
  paused: flag,
});

export async function runItems(input: RunItemsInput): Promise<ChunkResult> {
  checkInput('runItems', input, RUN_ITEMS_INPUT);
  try {
    return await runChunk(input);
  } catch (err) {
    // Failures end the chunk; anything else is a fault in cadre that must not fail workflow tasks forever.
    if (err instanceof TemporalFailure || isCancellation(err)) throw err;
    throw ApplicationFailure.create({ type: 'PlanFailed', message: `cadre internal error in a forEach chunk: ${(err as Error)?.message ?? String(err)}`, nonRetryable: true });
  }
}

async function runChunk(input: RunItemsInput): Promise<ChunkResult> {
  const { step, start, count } = input;
  let paused = input.paused;
  setHandler(itemsPausedSignal, (value) => {
    paused = value === true;
  });
  const items = 'values' in input.items ? listItems(input.items.values, '') : listItems(input.items.list, input.items.source);
  if (!items) throw ApplicationFailure.nonRetryable('runItems got no list of items', 'PlanFailed');
  const itemAt = (index: number) => ('values' in input.items ? items.at(index - start) : items.at(index));
  const done = input.previous ? [...input.previous.done].map((c) => c === '1') : new Array<boolean>(count).fill(false);
  const outputs = new Map<number, unknown>();
  const ids = new ActivityIds(() => true);
  const route: HostRoute | undefined =
    input.hostQueue === undefined
      ? undefined
      : new HostRoute({ taskQueue: input.hostQueue, ...(input.hostLostAfterMs !== undefined && { lostAfterMs: input.hostLostAfterMs }), solo: input.hostSolo === true }, () => {
          if (input.hostWaits) tellRun(route?.waiting(`${step.id}[${start}-${start + count - 1}]`));
        });
  // `cadre move` tells every running workflow of the run (anyone can send signals: only a move from where it is applies).
  setHandler(hostMovedSignal, (moved) => {
    if (typeof moved?.to === 'string' && moved.from === route?.taskQueue) route.move(moved.to);
  });
  let attempts = 0;
  let failure: StepError | undefined;
  let next = 0;
  // A condition an item is five promises, each with the SDK's recorded stack: chunks recorded since wait only while paused.
  const waitAlways = !patched(PATCH_LEAN_ITEMS);
  const lane = async () => {
    while (next < count && failure === undefined) {
      const offset = next++;
      if (done[offset]) continue;
      if (waitAlways || paused) await condition(() => !paused);
      const index = start + offset;
      try {
        const scope = { ...input.scope, [step.as]: itemAt(index), index };
        const result = await runItem(input, scope, `${step.id}[${index}]`, ids, route);
        attempts += result.attempt;
        outputs.set(offset, result.output);
        done[offset] = true;
      } catch (err) {
        if (isCancellation(err)) throw err;
        const described = describeFailure(err);
        attempts += described.attempts;
        failure ??= described;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(input.lanes, count)) }, lane));
  const list = Array.from({ length: count }, (_, offset) => {
    if (outputs.has(offset)) return outputs.get(offset);
    // Completed by an earlier run of this chunk: its output is read from that run's list.
    if (done[offset] && input.previous) return { $cadre: 'read', from: input.previous.outputs, path: [{ index: offset }], at: 'chunk', source: `chunk[${offset}]` };
    return null;
  });
  const stored = (await storedValues(route).resolveValue({ value: list, workspace: input.workspace, inlineLimit: 0 })) as StoredRef;
  return { outputs: stored, done: done.map((d) => (d ? '1' : '0')).join(''), completed: done.filter(Boolean).length, attempts, ...(failure && { failure }) };
}

async function runItem(input: RunItemsInput, scope: Record<string, unknown>, label: string, ids: ActivityIds, route: HostRoute | undefined): Promise<{ output: unknown; attempt: number }> {
  const { step, timeout, workspace } = input;
  if (step.action.kind !== 'tool') throw new Error(`step "${step.id}" has no tool to run for each item`);
  const params = resolveTemplates(step.action.with, scope, { strict: true }) as Record<string, unknown>;
  if (step.action.tool === 'sleep') {
    const duration = hasDeferred(params.duration) ? await storedValues(route).resolveValue({ value: params.duration, workspace, inlineLimit: 1024 }) : params.duration;
    return { output: await durableSleep(label, duration, timeout), attempt: 1 };
  }
  return callTool({
    step,
    tool: step.action.tool,
    params,
    timeout,
    label,
    workspace,
    local: runsLocally(step, step.action.tool) && (route === undefined || route.solo),
    ids,
    ...(route && { route }),
    inlineLimit: ITEM_INLINE_BYTES,
    ...(input.sandbox && { sandbox: input.sandbox }),
  });
}

/**
 * Tells the plan run what the chunk waits for (an unreachable host, or nothing now), as an agent
 * does: the run shows it as the step's wait. A run that has ended cannot be told, and need not be.
 */
function tellRun(wait: Waiting | undefined): void {
  const parent = workflowInfo().parent;
  if (!parent) return;
  const signal = { workflowId: workflowInfo().workflowId, waits: wait ? [wait] : [] };
  getExternalWorkflowHandle(parent.workflowId, parent.runId).signal(agentWaitsSignal, signal).catch(() => undefined);
}
