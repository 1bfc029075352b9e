/**
 * What a run's workflow code costs alone: its recorded history replayed, with no server and no
 * activity, as the CPU time of this process a replay: the workflow code's and the SDK's share of a
 * run, apart from the server's and the activities'. Other work on the machine still moves it.
 */
import { Worker, type WorkflowBundleOption } from '@temporalio/worker';
import type { temporal } from '@temporalio/proto';

/** CPU milliseconds a replay of `history` takes, the median of `rounds` rounds of `times` replays (one round first, not counted). */
export async function replayCpuMs(workflowBundle: WorkflowBundleOption, history: temporal.api.history.v1.IHistory, workflowId: string, times: number, rounds = 3): Promise<number> {
  const perReplay: number[] = [];
  for (let round = 0; round <= rounds; round++) {
    const copies = Array.from({ length: times }, () => ({ workflowId, history }));
    const cpu = process.cpuUsage();
    for await (const result of Worker.runReplayHistories({ workflowBundle, replayName: `replay-cost-${workflowId}-${round}` }, copies)) {
      if (result.error) throw new Error(`${workflowId} did not replay: ${result.error.message}`);
    }
    const used = process.cpuUsage(cpu);
    // The first round starts the replay worker and warms the JIT up.
    if (round > 0) perReplay.push((used.user + used.system) / 1000 / times);
  }
  return perReplay.sort((a, b) => a - b)[Math.floor(perReplay.length / 2)];
}
