/**
 * Writes one part of a finished run; writing the same part again (an activity retry) changes
 * nothing. Waits for people are numbered in the order they ended.
 */
import type { Query } from './types';
import type { RunAnalyticsPart } from './types';

export async function writeRunPart(query: Query, part: RunAnalyticsPart): Promise<void> {
  const { steps, humanWaits } = part;
  if (steps.length > 0) {
    // One parameter per column (arrays), however many steps: no limit on a statement's parameters.
    await query(
      `INSERT INTO cadre_steps (run_id, step_id, position, tool, status, attempts, duration_ms, model, input_tokens, output_tokens, cost_usd)
       SELECT $1, * FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::int[], $7::bigint[], $8::text[], $9::bigint[], $10::bigint[], $11::float8[])
       ON CONFLICT (run_id, step_id) DO UPDATE SET position = EXCLUDED.position, tool = EXCLUDED.tool,
         status = EXCLUDED.status, attempts = EXCLUDED.attempts, duration_ms = EXCLUDED.duration_ms,
         model = EXCLUDED.model, input_tokens = EXCLUDED.input_tokens, output_tokens = EXCLUDED.output_tokens, cost_usd = EXCLUDED.cost_usd`,
      [
        part.runId,
        steps.map((s) => s.id),
        steps.map((s) => s.position),
        steps.map((s) => s.tool),
        steps.map((s) => s.status),
        steps.map((s) => s.attempts),
        steps.map((s) => (s.durationMs === undefined ? null : Math.round(s.durationMs))),
        steps.map((s) => s.model ?? null),
        steps.map((s) => s.usage?.inputTokens ?? null),
        steps.map((s) => s.usage?.outputTokens ?? null),
        steps.map((s) => s.costUsd ?? null),
      ],
    );
  }
  if (humanWaits.length > 0) {
    await query(
      `INSERT INTO cadre_human_waits (run_id, seq, step_id, kind, outcome, waited_ms)
       SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::bigint[])
       ON CONFLICT (run_id, seq) DO NOTHING`,
      [
        part.runId,
        humanWaits.map((_, i) => part.humanWaitsFrom + i),
        humanWaits.map((w) => w.step),
        humanWaits.map((w) => w.kind),
        humanWaits.map((w) => w.outcome),
        humanWaits.map((w) => Math.round(w.waitedMs)),
      ],
    );
  }
  if (part.final) {
    await query(
      `INSERT INTO cadre_runs (run_id, workflow_id, plan, status, started_at, ended_at, duration_ms)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (run_id) DO NOTHING`,
      [part.runId, part.workflowId, part.plan, part.status, part.startedAt, part.endedAt, Math.round(part.durationMs)],
    );
  }
}
