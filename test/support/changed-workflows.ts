/** runPlan with a changed first command, as a careless edit would make it: replay must reject it. */
import { sleep } from '@temporalio/workflow';
import { runPlan as original } from '../../src/workflows';
import type { RunPlanInput } from '../../src/plan-format/types';

export async function runPlan(input: RunPlanInput) {
  await sleep('1s');
  return original(input);
}
