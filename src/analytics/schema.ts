/**
 * The analytics tables, the same in PGlite and in Postgres. Rows hold names, outcomes and times,
 * never a step's input, output or an answer. Created on first open; `IF NOT EXISTS` and an
 * advisory lock let several workers open one Postgres at once.
 */
export const SCHEMA_SQL = `
SELECT pg_advisory_xact_lock(724311);
CREATE TABLE IF NOT EXISTS cadre_runs (
  run_id      text PRIMARY KEY,
  workflow_id text NOT NULL,
  plan        text NOT NULL,
  status      text NOT NULL,
  started_at  timestamptz NOT NULL,
  ended_at    timestamptz NOT NULL,
  duration_ms bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS cadre_runs_by_plan ON cadre_runs (plan, ended_at);
CREATE TABLE IF NOT EXISTS cadre_steps (
  run_id      text NOT NULL,
  step_id     text NOT NULL,
  position    integer NOT NULL,
  tool        text NOT NULL,
  status      text NOT NULL,
  attempts    integer NOT NULL,
  duration_ms bigint,
  PRIMARY KEY (run_id, step_id)
);
-- What agent and decide steps spent (added later: databases made before gain the columns).
ALTER TABLE cadre_steps ADD COLUMN IF NOT EXISTS model text;
ALTER TABLE cadre_steps ADD COLUMN IF NOT EXISTS input_tokens bigint;
ALTER TABLE cadre_steps ADD COLUMN IF NOT EXISTS output_tokens bigint;
ALTER TABLE cadre_steps ADD COLUMN IF NOT EXISTS cost_usd float8;
CREATE TABLE IF NOT EXISTS cadre_human_waits (
  run_id    text NOT NULL,
  seq       integer NOT NULL,
  step_id   text NOT NULL,
  kind      text NOT NULL,
  outcome   text NOT NULL,
  waited_ms bigint NOT NULL,
  PRIMARY KEY (run_id, seq)
);
`;
