/**
 * Preflight passes the plans cadre ships and shows: every examples/*\/plan.yaml and every plan in
 * the README and docs has no error-level finding on this machine (its real PATH, files and
 * bubblewrap; nothing mocked). Warnings are fine: they name what an earlier step may create.
 * And the two plans the "Faults" issue reported refused are run by default.
 */
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { environmentProblems, systemProbe } from '../../src/preflight/environment';
import type { PreflightProblem } from '../../src/preflight/codes';
import { loadPlan } from '../../src/plan-format/load';
import { formatIssues, validatePlan } from '../../src/plan-format/validate';
import { docPlans, named, root } from './doc-plans';

/** Findings that block: anything not marked a warning (code before levels had none). */
const blocking = (problems: PreflightProblem[]) => problems.filter((p) => p.level !== 'warning');

const examples = readdirSync(path.join(root, 'examples'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && readdirSync(path.join(root, 'examples', entry.name)).includes('plan.yaml'))
  .map((entry) => path.join('examples', entry.name, 'plan.yaml'));

test('examples/ holds the plans this test runs', () => {
  expect(examples).toEqual(expect.arrayContaining(['examples/email-triage/plan.yaml', 'examples/feature-team/plan.yaml']));
});

describe.each(examples)('%s', (file) => {
  // `cadre run <file>` from the repository (the issue's way), and from the example's own folder.
  test.each([
    ['the repository', root],
    ['its folder', path.join(root, path.dirname(file))],
  ])('passes preflight run from %s', async (_where, cwd) => {
    const plan = await loadPlan(path.join(root, file), cwd);
    expect(blocking(await environmentProblems(plan))).toEqual([]);
  });
});

/** This machine, with the price table docs/agents.md shows in its cadre.config.yaml: the docs' cost budgets are priced by it. */
const docsProbe = { ...systemProbe, pricing: () => ({ prices: { 'openai:gpt-4o-mini': { input: 0.15, output: 0.6, cachedInput: 0.075 } } }) };

test('every plan in the README and docs passes preflight', async () => {
  const plans = docPlans();
  expect(plans.length).toBeGreaterThanOrEqual(6);
  const failures: string[] = [];
  for (const { block, plan } of plans) {
    const result = validatePlan(plan, { baseDir: root });
    if (!result.ok) failures.push(`${named(block)}: does not validate\n${formatIssues(result.issues)}`);
    else for (const p of blocking(await environmentProblems(result.plan, docsProbe))) failures.push(`${named(block)}: ${p.code} ${p.path}: ${p.message}`);
  }
  expect(failures).toEqual([]);
});

describe('the plans the issue reported refused', () => {
  // The old reading took the first word after `n=$(cat` for the program: "f" is not on PATH.
  test.each([
    'n=$(cat flaky.count); echo $((n+1)) > flaky.count',
    'n=$(cat f 2>/dev/null || echo 0); echo $((n+1)) > f',
    'n=$(cat f ); echo $((n+1)) > f',
  ])('a step that counts its runs in a file (%j) runs cat, which is on PATH', async (command) => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cadre-flaky-'));
    writeFileSync(path.join(dir, 'f'), '0\n');
    const result = validatePlan({ name: 'flaky', sandbox: 'none', steps: [{ id: 'count', tool: 'shell', with: { command } }] }, { baseDir: dir });
    if (!result.ok) throw new Error(formatIssues(result.issues));
    expect(await environmentProblems(result.plan)).toEqual([]);
    rmSync(dir, { recursive: true, force: true });
  });

  test('the feature-team example, whose first step creates the repository its worktrees use, only warns', async () => {
    const plan = await loadPlan(path.join(root, 'examples/feature-team/plan.yaml'), root);
    const problems = await environmentProblems(plan);
    expect(blocking(problems)).toEqual([]);
    expect(problems.map((p) => [p.code, p.level, p.path])).toEqual(
      ['implement', 'test', 'merge_implement', 'merge_test'].map((id) => ['CADRE-E202', 'warning', `steps[${plan.steps.findIndex((s) => s.id === id)}].worktree.repo`]),
    );
    expect(problems[0].message).toBe(`${path.join(root, 'repo')} is not a git repository: steps "repo", "plan" run before it and may create it`);
  });
});
