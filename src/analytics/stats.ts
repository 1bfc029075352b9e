/** What `cadre stats` and `cadre watch` read from the recorded runs. */
import type { Query } from './types';

export interface StatsFilter {
  plan?: string;
  /** Only runs that ended at or after this time. */
  since?: Date;
}

export interface StepStats {
  step: string;
  tool: string;
  /** Runs that recorded the step, whatever its outcome. */
  runs: number;
  completed: number;
  failed: number;
  skipped: number;
  cancelled: number;
  /** Runs in which the step needed more than one attempt. */
  retried: number;
  /** Of the runs in which the step ran to an end (completed or failed). */
  failureRate?: number;
  retryRate?: number;
  /** Of its completed runs. */
  p50Ms?: number;
  p95Ms?: number;
}

export interface HumanWaitStats {
  step: string;
  kind: string;
  waits: number;
  answered: number;
  timedOut: number;
  p50Ms: number;
  p95Ms: number;
}

export interface PlanStats {
  plan: string;
  runs: number;
  completed: number;
  failed: number;
  cancelled: number;
  /** Of its completed runs. */
  p50Ms?: number;
  p95Ms?: number;
  steps: StepStats[];
  humanWaits: HumanWaitStats[];
  /** What its agent and decide steps spent, by model and day (UTC), newest first. */
  spend: SpendStats[];
}

export interface SpendStats {
  model: string;
  /** YYYY-MM-DD, the day the runs ended (UTC). */
  day: string;
  steps: number;
  inputTokens: number;
  outputTokens: number;
  /** USD of the steps whose model had a price when the run was recorded. */
  costUsd: number;
  /** Steps whose model had no price: their tokens are not in costUsd. */
  unpriced: number;
}

type Row = Record<string, string | number | null>;

export async function readStats(query: Query, filter: StatsFilter = {}): Promise<PlanStats[]> {
  const where = `($1::text IS NULL OR r.plan = $1) AND ($2::timestamptz IS NULL OR r.ended_at >= $2)`;
  const params = [filter.plan ?? null, filter.since?.toISOString() ?? null];
  const runs = await query<Row>(
    `SELECT r.plan, count(*)::int AS runs,
       count(*) FILTER (WHERE r.status = 'completed')::int AS completed,
       count(*) FILTER (WHERE r.status = 'failed')::int AS failed,
       count(*) FILTER (WHERE r.status = 'cancelled')::int AS cancelled,
       (percentile_cont(0.5) WITHIN GROUP (ORDER BY r.duration_ms) FILTER (WHERE r.status = 'completed'))::float8 AS p50,
       (percentile_cont(0.95) WITHIN GROUP (ORDER BY r.duration_ms) FILTER (WHERE r.status = 'completed'))::float8 AS p95
     FROM cadre_runs r WHERE ${where} GROUP BY r.plan ORDER BY r.plan`,
    params,
  );
  const steps = await query<Row>(
    `SELECT r.plan, s.step_id, s.tool, min(s.position) AS position, count(*)::int AS runs,
       count(*) FILTER (WHERE s.status = 'completed')::int AS completed,
       count(*) FILTER (WHERE s.status = 'failed')::int AS failed,
       count(*) FILTER (WHERE s.status = 'skipped')::int AS skipped,
       count(*) FILTER (WHERE s.status = 'cancelled')::int AS cancelled,
       count(*) FILTER (WHERE s.attempts > 1 AND s.status IN ('completed', 'failed'))::int AS retried,
       (percentile_cont(0.5) WITHIN GROUP (ORDER BY s.duration_ms) FILTER (WHERE s.status = 'completed'))::float8 AS p50,
       (percentile_cont(0.95) WITHIN GROUP (ORDER BY s.duration_ms) FILTER (WHERE s.status = 'completed'))::float8 AS p95
     FROM cadre_steps s JOIN cadre_runs r USING (run_id) WHERE ${where}
     GROUP BY r.plan, s.step_id, s.tool ORDER BY r.plan, position, s.step_id`,
    params,
  );
  const waits = await query<Row>(
    `SELECT r.plan, w.step_id, w.kind, count(*)::int AS waits,
       count(*) FILTER (WHERE w.outcome = 'answered')::int AS answered,
       count(*) FILTER (WHERE w.outcome = 'timed_out')::int AS timed_out,
       (percentile_cont(0.5) WITHIN GROUP (ORDER BY w.waited_ms))::float8 AS p50,
       (percentile_cont(0.95) WITHIN GROUP (ORDER BY w.waited_ms))::float8 AS p95
     FROM cadre_human_waits w JOIN cadre_runs r USING (run_id) WHERE ${where}
     GROUP BY r.plan, w.step_id, w.kind ORDER BY r.plan, w.step_id, w.kind`,
    params,
  );
  const spend = await query<Row>(
    `SELECT r.plan, s.model, to_char(r.ended_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day, count(*)::int AS steps,
       coalesce(sum(s.input_tokens), 0)::float8 AS input_tokens, coalesce(sum(s.output_tokens), 0)::float8 AS output_tokens,
       coalesce(sum(s.cost_usd), 0)::float8 AS cost_usd, count(*) FILTER (WHERE s.cost_usd IS NULL)::int AS unpriced
     FROM cadre_steps s JOIN cadre_runs r USING (run_id) WHERE ${where} AND s.model IS NOT NULL AND s.input_tokens IS NOT NULL
     GROUP BY r.plan, s.model, day ORDER BY r.plan, day DESC, s.model`,
    params,
  );
  return runs.map((row) => {
    const plan = String(row.plan);
    return {
      plan,
      runs: num(row.runs),
      completed: num(row.completed),
      failed: num(row.failed),
      cancelled: num(row.cancelled),
      ...ms('p50Ms', row.p50),
      ...ms('p95Ms', row.p95),
      steps: steps.filter((s) => s.plan === plan).map(stepStats),
      humanWaits: waits
        .filter((w) => w.plan === plan)
        .map((w) => ({ step: String(w.step_id), kind: String(w.kind), waits: num(w.waits), answered: num(w.answered), timedOut: num(w.timed_out), p50Ms: num(w.p50), p95Ms: num(w.p95) })),
      spend: spend
        .filter((x) => x.plan === plan)
        .map((x) => ({ model: String(x.model), day: String(x.day), steps: num(x.steps), inputTokens: num(x.input_tokens), outputTokens: num(x.output_tokens), costUsd: num(x.cost_usd), unpriced: num(x.unpriced) })),
    };
  });
}

function stepStats(row: Row): StepStats {
  const completed = num(row.completed);
  const failed = num(row.failed);
  const retried = num(row.retried);
  const ended = completed + failed;
  return {
    step: String(row.step_id),
    tool: String(row.tool),
    runs: num(row.runs),
    completed,
    failed,
    skipped: num(row.skipped),
    cancelled: num(row.cancelled),
    retried,
    ...(ended > 0 && { failureRate: failed / ended, retryRate: retried / ended }),
    ...ms('p50Ms', row.p50),
    ...ms('p95Ms', row.p95),
  };
}

/** How long a plan's runs took: what `cadre watch` turns into an ETA. */
export interface RunEstimate {
  plan: string;
  /** Completed runs it is based on (the latest, at most ESTIMATE_RUNS). */
  runs: number;
  p50Ms: number;
  p95Ms: number;
}

export const ESTIMATE_RUNS = 50;

export async function estimateRun(query: Query, plan: string): Promise<RunEstimate | undefined> {
  const [row] = await query<Row>(
    `SELECT count(*)::int AS runs,
       (percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms))::float8 AS p50,
       (percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_ms))::float8 AS p95
     FROM (SELECT duration_ms FROM cadre_runs WHERE plan = $1 AND status = 'completed' ORDER BY ended_at DESC LIMIT ${ESTIMATE_RUNS}) latest`,
    [plan],
  );
  if (!row || num(row.runs) === 0) return undefined;
  return { plan, runs: num(row.runs), p50Ms: num(row.p50), p95Ms: num(row.p95) };
}

function num(value: string | number | null | undefined): number {
  return Number(value ?? 0);
}

function ms<K extends string>(key: K, value: string | number | null | undefined): Partial<Record<K, number>> {
  return value === null || value === undefined ? {} : ({ [key]: Math.round(Number(value)) } as Record<K, number>);
}
