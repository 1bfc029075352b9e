/**
 * The scale benchmarks (bench/scale-*.ts, `npm run bench:scale`) take half an hour at full size, so
 * they run here at a few seconds' sizes on the test dev server: their code (worker processes, the
 * histories they read, the figures and plots they make) keeps working between the long runs.
 * Figures are checked for sense, never for speed.
 */
import { FOREACH_CHILD_THRESHOLD } from '../src/plan-format/limits';
import { forEachPlots, forEachScale } from '../bench/scale-foreach';
import { type OwnedScaleEnv, testScaleEnv } from '../bench/scale-env';
import { runsPlots, runsScale } from '../bench/scale-runs';
import { BUCKET, sessionPlots, sessionScale } from '../bench/scale-session';

let env: OwnedScaleEnv;
beforeAll(async () => {
  env = await testScaleEnv(() => undefined);
});
afterAll(async () => {
  await env?.stop();
});

/** A plot's data points (Vega itself, an ES module, does not load under jest: bench/plot.ts renders in the benchmarks). */
const pointsOf = (spec: unknown) => ((spec as { data: { name: string; values: { series: unknown }[] }[] }).data.find((d) => d.name === 'points')?.values ?? []);

describe('scale benchmarks at smoke size', () => {
  test('a forEach past one chunk: every item counted, histories small, worker memory reported', async () => {
    const items = FOREACH_CHILD_THRESHOLD + 1;
    const report = await forEachScale(env, [items], { warmupItems: 0 });
    expect(report.ok).toBe(true);
    const [run] = report.runs;
    // The run and two chunks (1,000 items and 1).
    expect(run).toMatchObject({ items, status: 'completed', histories: 3, itemsCounted: items });
    expect(run.largestEvents).toBeLessThan(2 * FOREACH_CHILD_THRESHOLD + 100);
    expect(run.workerPeakRssMb).toBeGreaterThan(0);
    expect(report.workerPeakRssMb).toBeGreaterThan(0);
    const plots = forEachPlots(report, 0);
    expect(Object.keys(plots)).toEqual(['', '-progress']);
    expect(pointsOf(plots['-progress']).length).toBeGreaterThan(10);
  });

  test('a session across continue-as-new: a time for every turn, the chain of runs followed', async () => {
    const turns = 24;
    const report = await sessionScale(env, turns, { continueEvery: 10, warmup: 1 });
    expect(report.msPerTurn.n).toBe(turns);
    expect(report.histories.runs).toBe(3);
    expect(report.buckets.length).toBe(1);
    expect(report.windows.late.meanMs).toBeGreaterThan(0);
    expect(report.workerPeakRssMb).toBeGreaterThan(0);
    const plots = sessionPlots(report, 0);
    // A point per bucket in each series: mean, p50, p95, the worker's CPU (and the server's where /proc shows it).
    const points = pointsOf(plots['']);
    const series = new Set(points.map((p) => String(p.series)));
    expect([...series]).toEqual(expect.arrayContaining([`mean of ${BUCKET} turns`, `p50 of ${BUCKET} turns`, `p95 of ${BUCKET} turns`, "worker's CPU per turn"]));
    expect(points).toHaveLength(series.size * report.buckets.length);
    expect(pointsOf(plots['-memory']).length).toBeGreaterThan(0);
  });

  test('runs at once on one worker process and on two: every step measured', async () => {
    const size = { runs: 4, steps: 2, rounds: 1 };
    const report = await runsScale(env, size);
    expect(report.rounds.map((r) => r.workers)).toEqual([1, 2]);
    expect(report.rounds[1].workerPeakRssMb).toHaveLength(2);
    for (const r of report.rounds) {
      expect(r.stepMs.n).toBe(size.runs * size.steps);
      expect(r.stepMs.p99).toBeGreaterThanOrEqual(r.activityMs.p50);
    }
    expect(report.secondWorker).toHaveLength(1);
    const points = pointsOf(runsPlots(report, 0)['']);
    expect(new Set(points.map((p) => String(p.series).split(':')[0]))).toEqual(new Set(['round 1, 1 worker', 'round 2, 2 workers']));
  });
});
