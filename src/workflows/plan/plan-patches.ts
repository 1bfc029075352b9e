/** runPlan's patches, behind its baselines (protocol/patches.ts): asked once, as the run starts. */
import { PLAN_BASELINES } from '../../protocol/patches';
import { PatchBaselines } from '../patch-baselines';

export class PlanPatches extends PatchBaselines {
  constructor() {
    super(PLAN_BASELINES);
  }
}
