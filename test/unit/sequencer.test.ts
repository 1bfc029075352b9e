/** jest's order of test files (test/support/sequencer.js): the longest first, and every file once. */
import { existsSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const LongestFirst = require('../support/sequencer.js') as new () => {
  sort(tests: FakeTest[]): FakeTest[];
  cacheResults(tests: FakeTest[], results: unknown): void;
};
// eslint-disable-next-line @typescript-eslint/no-require-imports
const CI_SECONDS = require('../support/test-times.json') as Record<string, number>;

const ROOT = path.join(__dirname, '..', '..');
interface FakeTest {
  path: string;
  context: unknown;
}

function contextWith(sizes: Record<string, number>) {
  const config = { cache: true, cacheDirectory: mkdtempSync(path.join(os.tmpdir(), 'cadre-sequencer-')), id: 'sequencer-test', haste: {}, name: 'sequencer-test' };
  return { config, hasteFS: { getSize: (file: string) => sizes[file] } };
}

const file = (name: string) => path.join(ROOT, name);

test('with no timings of its own: CI\'s longest first, files CI never timed before them, each file once', () => {
  const unknown = file('test/a-new-file.test.ts');
  const names = ['test/fleet.test.ts', 'test/faults/worker-kills.test.ts', 'test/analytics.test.ts', 'test/unit/validate.test.ts', 'test/sessions.test.ts'];
  const context = contextWith({ [unknown]: 10 });
  const tests = [...names.map((n) => ({ path: file(n), context })), { path: unknown, context }];
  const sorted = new LongestFirst().sort([...tests]).map((t) => path.relative(ROOT, t.path));
  // CI's timings change with every update of test-times.json: the order is read from them (ties broken by nothing the test can know).
  const seconds = names.map((n) => CI_SECONDS[n]);
  expect(new Set(seconds).size).toBe(names.length);
  expect(sorted).toEqual(['test/a-new-file.test.ts', ...[...names].sort((a, b) => CI_SECONDS[b] - CI_SECONDS[a])]);
});

test("jest's own timings, when it has them, come before CI's; a file that failed last time runs first", () => {
  const context = contextWith({});
  const tests = ['test/unit/layout.test.ts', 'test/analytics.test.ts', 'test/sessions.test.ts', 'test/unit/validate.test.ts'].map((n) => ({ path: file(n), context }));
  const sequencer = new LongestFirst();
  const result = (name: string, runtime: number, failing = 0) => ({ testFilePath: file(name), numFailingTests: failing, perfStats: { runtime }, skipped: false });
  sequencer.cacheResults(tests, { testResults: [result('test/unit/layout.test.ts', 500_000), result('test/analytics.test.ts', 1000), result('test/unit/validate.test.ts', 10, 1), result('test/sessions.test.ts', 2000)] });
  const sorted = new LongestFirst().sort([...tests]).map((t) => path.relative(ROOT, t.path));
  expect(sorted).toEqual(['test/unit/validate.test.ts', 'test/unit/layout.test.ts', 'test/sessions.test.ts', 'test/analytics.test.ts']);
});

test("CI's timings name only files that exist", () => {
  expect(Object.keys(CI_SECONDS).filter((name) => !existsSync(file(name)))).toEqual([]);
});
