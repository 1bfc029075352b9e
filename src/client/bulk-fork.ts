/**
 * Bulk forks after a fix (docs/forks.md): every plan run that failed in a past window (of one plan,
 * when named) forked from its failed step, or from a step named for all. Which step failed is read
 * from each run's recorded failure, so no worker is needed to choose it.
 */
import type { CadreClient, ForkOptions } from './client';

export interface BulkForkOptions extends Omit<ForkOptions, 'step' | 'workflowId'> {
  /** Failed runs that started after this. */
  since: Date;
  /** Only runs of this plan (by name); an edited plan names its own. */
  planName?: string;
  /** The step each fork runs again from; default each run's first failed step. */
  step?: string;
}

export interface BulkForkReport {
  forked: { run: string; step: string; fork: string }[];
  /** Failed runs not forked, and why (a run that failed before any step ran). */
  skipped: { run: string; why: string }[];
}

/** Upper bound on the runs one bulk fork takes: a window that matches more says so, and a narrower one forks the rest. */
export const MAX_BULK_FORKS = 1000;

export async function forkFailed(client: CadreClient, options: BulkForkOptions): Promise<BulkForkReport & { more: boolean }> {
  const { since, planName, step, ...fork } = options;
  const name = planName ?? options.plan?.name;
  const clauses = ['WorkflowType = "runPlan"', 'ExecutionStatus = "Failed"', `StartTime > "${since.toISOString()}"`, ...(name ? [`CadrePlan = ${JSON.stringify(name)}`] : [])];
  const runs: string[] = [];
  let more = false;
  for await (const run of client.client.workflow.list({ query: clauses.join(' AND ') })) {
    if (runs.length >= MAX_BULK_FORKS) {
      more = true;
      break;
    }
    runs.push(run.workflowId);
  }
  const report: BulkForkReport = { forked: [], skipped: [] };
  for (const run of runs.reverse()) {
    const from = step ?? (await failedStep(client, run));
    if (from === undefined) {
      report.skipped.push({ run, why: 'it failed before any step ran (its plan or its input): fix that and run it again' });
      continue;
    }
    const started = await client.fork(run, { ...fork, step: from });
    report.forked.push({ run, step: from, fork: started.workflowId });
  }
  return { ...report, more };
}

/** The run's first failed step, in plan order, from its recorded failure. */
async function failedStep(client: CadreClient, run: string): Promise<string | undefined> {
  const d = await client.diagnostics(run);
  return d.steps.find((s) => s.status === 'failed')?.id;
}
