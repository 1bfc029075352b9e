/**
 * Stable codes for what keeps a plan from running: E1xx the plan, E2xx the environment it runs in,
 * E3xx the Temporal server. A code keeps its meaning across versions (README lists them); scripts
 * and support answers can rely on it.
 */
export const PREFLIGHT_CODES = {
  'CADRE-E101': 'the plan file cannot be read or parsed',
  'CADRE-E102': 'the plan does not validate',
  'CADRE-E103': 'an input is missing or has the wrong type',
  'CADRE-E201': 'a command a shell step runs is not on PATH (or not in the workspace)',
  'CADRE-E202': 'a workspace, or a worktree repository, does not exist',
  'CADRE-E203': 'an HTTP host a step calls does not resolve',
  'CADRE-E204': 'an environment variable a shell step reads is not set, or the sandbox does not pass it',
  'CADRE-E205': 'the plan runs commands in the sandbox and bubblewrap cannot run here',
  'CADRE-E206': 'an HTTP host a step calls is not allowed by the plan\'s egress',
  'CADRE-E207': "a plan's or an agent's cost budget is spent by a model with no price in `cadre.config.yaml` (`models.prices`)",
  'CADRE-E301': 'the Temporal server cannot be reached',
  'CADRE-E302': "the namespace lacks cadre's search attributes",
  'CADRE-E303': 'no worker polls the task queue',
} as const;

export type PreflightCode = keyof typeof PREFLIGHT_CODES;

/**
 * `error`: the run would fail, so `cadre run` refuses to start it. `warning`: it may fail (what is
 * missing is something an earlier step, or the command itself, may create first): shown, never blocking.
 */
export type PreflightLevel = 'error' | 'warning';

export interface PreflightProblem {
  code: PreflightCode;
  level: PreflightLevel;
  /** Where in the plan (`steps[2].with.command`), or '' for the server. */
  path: string;
  message: string;
}

export function problem(code: PreflightCode, path: string, message: string, level: PreflightLevel = 'error'): PreflightProblem {
  return { code, level, path, message };
}

export function errorsOf(problems: PreflightProblem[]): PreflightProblem[] {
  return problems.filter((p) => p.level === 'error');
}

export function warningsOf(problems: PreflightProblem[]): PreflightProblem[] {
  return problems.filter((p) => p.level === 'warning');
}

/** One line each: `CADRE-E201 steps[0].with.command: ...`, a warning's prefixed `warning: `. */
export function formatProblems(problems: PreflightProblem[]): string {
  return problems.map((p) => `${p.level === 'warning' ? 'warning: ' : ''}${p.code} ${p.path ? `${p.path}: ` : ''}${p.message}`).join('\n');
}
