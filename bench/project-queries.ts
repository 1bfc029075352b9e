/**
 * The code-navigation queries bench/worktrees.ts times on this project's own source. Each names
 * a file and a symbol of it, so a file that moves breaks test/unit/bench-queries.test.ts rather than
 * `npm run bench` (CI runs only three benchmarks; this is not one of them).
 */
export interface ProjectQuery {
  tool: string;
  params: Record<string, unknown>;
  /** A file of this project and a name it holds: checked to exist by the unit test. */
  file: string;
  symbol: string;
}

export const PROJECT_QUERIES: Record<string, ProjectQuery> = {
  navigate_imports: { tool: 'code.navigate_imports', params: { file: 'src/index.ts', symbol: 'CadreClient' }, file: 'src/index.ts', symbol: 'CadreClient' },
  find_implementations: { tool: 'code.find_implementations', params: { typeName: 'CadreError', dir: 'src' }, file: 'src/errors/cadre-error.ts', symbol: 'CadreError' },
  find_references: { tool: 'code.find_references', params: { file: 'src/plan-format/readiness.ts', symbol: 'Readiness' }, file: 'src/plan-format/readiness.ts', symbol: 'Readiness' },
  trace_data_flow: {
    tool: 'code.trace_data_flow',
    params: { symbol: 'resolveTemplates', file: 'src/plan-format/templates.ts', direction: 'backward' },
    file: 'src/plan-format/templates.ts',
    symbol: 'resolveTemplates',
  },
};
