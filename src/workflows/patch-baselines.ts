/**
 * `patched()` behind baselines (protocol/patches.ts): a run asks, as it starts, for its workflow's
 * baselines from the newest, and takes the first it finds (a new run: the newest, one marker).
 * A patch in the baseline it took is answered without a marker; any other is asked for by itself.
 */
import { patched } from '@temporalio/workflow';
import type { PatchBaseline } from '../protocol/patches';

/** Whether the run takes a patch: what the workflows' modules ask instead of `patched()`. */
export interface Patches {
  has(id: string): boolean;
}

export class PatchBaselines implements Patches {
  private readonly taken: ReadonlySet<string>;

  /** Asked once, as the run starts: `baselines` oldest first. */
  constructor(baselines: readonly PatchBaseline[]) {
    const found = [...baselines].reverse().find(([marker]) => patched(marker));
    this.taken = found?.[1] ?? new Set();
  }

  has(id: string): boolean {
    return this.taken.has(id) || patched(id);
  }
}
