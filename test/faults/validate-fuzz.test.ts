/**
 * Validates every plan of the seeded fuzz corpus in-process, through loadPlan as the CLI does,
 * and a sample through the real CLI: each is valid, or refused with messages and paths.
 * Nothing crashes, hangs or prints a stack.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PlanError, loadPlanWithWarnings } from '../../src/plan-format/load';
import type { PlanIssue } from '../../src/plan-format/issues';
import { runCadre } from '../support/cli';
import { type FuzzPlan, generateFuzzPlans, validatingFuzzPlans } from './plan-fuzz';

type Outcome = { kind: 'valid' } | { kind: 'rejected'; issues: PlanIssue[] } | { kind: 'crash'; error: string };

/** Problems about the file as a whole (empty, not a map, unreadable), which have no path inside the plan. */
const WHOLE_FILE = /^(the plan is empty|a plan is a map|not valid JSON|cannot parse the YAML|the file is over|\.\.\.and [\d,]+ more problems)/;

/** What the fixed cases must give: valid, or a problem at a path matching the pattern. */
const EXPECTED: Record<string, 'valid' | RegExp> = {
  'timeout out of range': /^steps\[0\]\.timeout$/,
  'ask timeout zero': /^steps\[0\]\.ask\.timeout$/,
  'default timeout zero': /^defaults\.timeout$/,
  'maximumAttempts out of range': /^steps\[0\]\.retry\.maximumAttempts$/,
  'maximumInterval below initialInterval': /^steps\[0\]\.retry\.maximumInterval$/,
  'maximumInterval below the default initialInterval': /^defaults\.retry\.maximumInterval$/,
  'backoffCoefficient out of range': /^steps\[0\]\.retry\.backoffCoefficient$/,
  '5,000-character step id': /^steps\[0\]\.id$/,
  'long plan name': /^name$/,
  'long input name': /^inputs\.i+$/,
  '10 MB command': /^steps\[0\]\.with\.command$/,
  '3 MB question': /^steps\[0\]\.ask\.question$/,
  '1.5 MB default sent twice': /^inputs\.big\.default$/,
  'unknown transform': /^steps\[0\]\.when$/,
  'function call': /^steps\[0\]\.when$/,
  'input default of the wrong type': /^inputs\.x\.default$/,
  '5,000-step chain in reverse order': 'valid',
  '5,000-step chain in order': 'valid',
  '1,000-step chain in reverse order': 'valid',
  'cycle of 2': /^steps\[\d+\]$/,
  'cycle of 3': /^steps\[\d+\]$/,
  'cycle of 10': /^steps\[\d+\]$/,
  'cycle of 100': /^steps\[\d+\]$/,
  'cycle of 1000': /^steps\[\d+\]$/,
  'cycle of 10000': /^steps\[\d+\]$/,
  'cycle of 500 through templates': /^steps\[\d+\]$/,
  '3,000-deep with': /^steps\[0\]\.with\.content(\.k|\[0\])/,
  '3,000-deep output': /^output(\.k|\[0\])/,
  '3,000-deep ask': /^steps\[0\]\.ask\.choices(\.k|\[0\])/,
  '3,000-deep forEach': /^steps\[0\]\.forEach(\.k|\[0\])/,
  '3,000-deep input default': /^inputs\.d\.default(\.k|\[0\])/,
  '100,000-deep JSON': /^output\[0\]/,
  '3,000-deep YAML flow': /^line \d+$/,
  '1,500-deep YAML block': /^line \d+$/,
  'when of 5,000 terms': /^steps\[0\]\.when$/,
  'when of 20,000 nested parentheses': /^steps\[0\]\.when$/,
  'when with a 20,000-deep ternary': /^steps\[0\]\.when$/,
  'when at the length limit': 'valid',
  'YAML alias bomb': /^line \d+$/,
  'YAML anchors and aliases used sensibly': 'valid',
  'YAML duplicate key': /^line 2$/,
  'JSON duplicate key': /^line 1$/,
  'unknown YAML tag': /^line 2$/,
  'YAML binary': /^steps$/,
  'YAML 1.1 timestamp': /^steps\[0\]\.with\.content$/,
  'unclosed templates': /^steps\[0\]\.with\.command$/,
  '10,000-character template': /^steps\[0\]\.with\.command$/,
  '2,500 steps that can all run at once': /^steps\[0\]$/,
  '100,001 literal forEach items': /^steps\[0\]\.forEach$/,
  '5,000 literal forEach items': 'valid',
  'two loops of 1,000 items': 'valid',
  '5,001 steps': /^steps$/,
  '25,000 steps': /^steps$/,
  'loop variable hiding steps': /^steps\[0\]\.as$/,
  'at the limit: 128-character step id': 'valid',
  'at the limit: 100-character plan name': 'valid',
  'at the limit: 1ms timeout': 'valid',
  'at the limit: 3650d timeout': 'valid',
  'at the limit: retry extremes': 'valid',
  'at the limit: unicode and control characters in data': 'valid',
  'at the limit: 1,000 literal items': 'valid',
  'at the limit: 1,001 literal items': 'valid',
  'at the limit: nesting of 64': 'valid',
  'at the limit: a 1.5 MiB parameter': 'valid',
  'at the limit: 2,000 tools at once': 'valid',
  'at the limit: ask with a 1ms timeout': 'valid',
  'at the limit: sleep of 0ms': 'valid',
  'at the limit: 30-term when': 'valid',
  'NaN in JSON': /^$/,
  'file over 16 MiB': /^$/,
};

async function outcome(file: string, dir: string): Promise<Outcome> {
  try {
    await loadPlanWithWarnings(file, dir);
    return { kind: 'valid' };
  } catch (err) {
    if (err instanceof PlanError) {
      const stopped = err.issues.find((i) => i.message.includes('validation stopped unexpectedly'));
      return stopped ? { kind: 'crash', error: `${stopped.path}: ${stopped.message}` } : { kind: 'rejected', issues: err.issues };
    }
    return { kind: 'crash', error: String(err instanceof Error ? err.stack : err) };
  }
}

/** An issue is well-formed when it has a message and, unless it is about the whole file, a path. */
const wellFormed = (issue: PlanIssue) => issue.message.trim() !== '' && (issue.path !== '' || WHOLE_FILE.test(issue.message));

describe('the fuzz corpus', () => {
  const plans = generateFuzzPlans();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-fuzz-'));
  const written = (plan: FuzzPlan) => path.join(dir, plan.file);
  beforeAll(() => {
    for (const plan of plans) writeFileSync(written(plan), plan.text);
  });
  // About 40 MB of files: do not leave them behind.
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('is seeded: the same seed gives the same files, another seed others; at least 300 plans covering every attack', () => {
    const digest = (list: FuzzPlan[]) => createHash('sha256').update(list.map((p) => `${p.file}\u0000${p.text}`).join('\u0001')).digest('hex');
    expect(digest(generateFuzzPlans())).toBe(digest(plans));
    expect(digest(generateFuzzPlans(1))).not.toBe(digest(plans));
    expect(plans.length).toBeGreaterThanOrEqual(300);
    const kinds = new Set(plans.map((p) => p.kind));
    expect(Object.keys(EXPECTED).filter((kind) => !kinds.has(kind))).toEqual([]);
    expect(new Set(plans.map((p) => p.file)).size).toBe(plans.length);
  });

  test('every plan is valid, or refused with a message and a path for each problem; none crashes', async () => {
    const results: { plan: FuzzPlan; result: Outcome }[] = [];
    for (const plan of plans) results.push({ plan, result: await outcome(written(plan), dir) });

    const crashes = results.filter((r) => r.result.kind === 'crash');
    const valid = results.filter((r) => r.result.kind === 'valid');
    const rejected = results.filter((r) => r.result.kind === 'rejected');
    const withPath = rejected.filter((r) => r.result.kind === 'rejected' && r.result.issues.every((i) => i.path !== ''));
    console.log(
      `fuzz: ${plans.length} plans, ${crashes.length} crashes, ${valid.length} valid, ${withPath.length} rejected with a path, ` +
        `${rejected.length - withPath.length} rejected as a whole file (empty, not a map, not JSON, too big)`,
    );

    expect(crashes.map((r) => `${r.plan.file} (${r.plan.kind}): ${r.result.kind === 'crash' ? r.result.error : ''}`)).toEqual([]);
    const malformed = rejected.flatMap((r) => (r.result.kind === 'rejected' ? r.result.issues.filter((i) => !wellFormed(i)).map((i) => `${r.plan.file}: "${i.path}" ${i.message}`) : []));
    expect(malformed).toEqual([]);
    // Plenty of both: the corpus is neither all junk nor all fine.
    expect(valid.length).toBeGreaterThan(20);
    expect(withPath.length).toBeGreaterThan(200);

    const wrong = results.flatMap(({ plan, result }) => {
      const expected = EXPECTED[plan.kind];
      if (expected === undefined) return [];
      if (expected === 'valid') return result.kind === 'valid' ? [] : [`${plan.file} (${plan.kind}): expected valid, got ${JSON.stringify(result).slice(0, 300)}`];
      if (result.kind === 'rejected' && result.issues.some((i) => expected.test(i.path))) return [];
      return [`${plan.file} (${plan.kind}): expected a problem at ${expected}, got ${JSON.stringify(result).slice(0, 300)}`];
    });
    expect(wrong).toEqual([]);
    expect(validatingFuzzPlans(dir).map((p) => p.file)).toEqual(valid.map((r) => r.plan.file));
  });

  test('the CLI on a sample: exit 0, or exit 2 with paths; never exit 1, never a stack trace', async () => {
    const named = ['10 MB command', '5,000-step chain in reverse order', 'cycle of 10000', '3,000-deep with', '3,000-deep YAML flow', 'when of 5,000 terms', 'YAML alias bomb', 'JSON duplicate key', 'timeout out of range', 'maximumAttempts out of range', '5,000-character step id', 'unknown transform', 'input default of the wrong type', 'empty YAML', 'binary file'];
    const sample = [...named.map((kind) => plans.find((p) => p.kind === kind) as FuzzPlan), ...plans.filter((p) => p.file.includes('mutant')).filter((_, i) => i % 50 === 7)];
    expect(sample.length).toBeGreaterThanOrEqual(20);
    const env = { ...process.env, CADRE_DEBUG: '' };
    const runs: string[] = [];
    for (let i = 0; i < sample.length; i += 4) {
      const batch = sample.slice(i, i + 4);
      const results = await Promise.all(batch.map((plan) => runCadre(['validate', plan.file], dir, env)));
      results.forEach((result, j) => {
        const file = batch[j].file;
        const lines = result.stderr.trimEnd().split('\n');
        const problems = lines.slice(1).filter((line) => line.startsWith('  '));
        const ok =
          (result.code === 0 && result.stdout.startsWith(`${file}: ok (plan `)) ||
          (result.code === 2 &&
            new RegExp(`^${file.replace(/[.]/g, '\\.')}: \\d+ problems?$`).test(lines[0]) &&
            problems.length > 0 &&
            problems.every((line) => /^ {2}\S[^:]*: \S/.test(line) || WHOLE_FILE.test(line.trim())));
        const stack = /^\s+at .+:\d+:\d+\)?$/m.test(result.stderr);
        runs.push(`${file}: exit ${result.code}${ok && !stack ? '' : ` UNEXPECTED\n${result.stderr.slice(0, 500)}`}`);
      });
    }
    console.log(`fuzz CLI sample:\n${runs.join('\n')}`);
    expect(runs.filter((line) => line.includes('UNEXPECTED'))).toEqual([]);
  });
});
