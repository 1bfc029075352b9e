/**
 * Run analytics: a `cadre worker` records every finished run (completed, failed, cancelled) in its
 * embedded PGlite database; `cadre stats` reads per-step percentiles, failure and retry rates and
 * waits for people from it, and `cadre watch` shows an ETA from past runs of the same plan.
 */
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { type AnalyticsTarget, withAnalytics } from '../src/analytics/database';
import { LockBusyError, acquireLock } from '../src/analytics/lock';
import { type PlanStats, readStats } from '../src/analytics/stats';
import { hasPending } from '../src/analytics/spool';
import { etaLine, renderPlanStats } from '../src/client/stats-command';
import { freePort } from '../src/worker/ports';
import { CadreClient } from '../src/client/client';
import type { Diagnostics } from '../src/protocol/definitions';
import { exited, runCadre, spawnCadre, startCadreWorker } from './support/cli';
import { tempWorkspace, uniqueId } from './support/harness';
import { TSX } from './support/tsx';
import { CLI_POLL_MS, until } from './support/until';
import { processAlive } from './support/processes';

const exec = promisify(execFile);

/** percentile_cont: linear interpolation between the two nearest ranks, as Postgres computes it. */
function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const rank = p * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  return sorted[low] + (sorted[high] - sorted[low]) * (rank - low);
}

describe('the analytics database', () => {
  test('a part written twice (an activity retry) counts once; a run shows only once its last part is in', async () => {
    const dirs = [mkdtempSync(path.join(os.tmpdir(), 'cadre-analytics-unit-')), path.join(os.tmpdir(), uniqueId('cadre-analytics-inbox'))];
    const { stdout } = await exec(process.execPath, ['--import', TSX, path.join(__dirname, 'support', 'analytics-probe.ts'), ...dirs]);
    const probe = JSON.parse(stdout) as { beforeLastPart: PlanStats[]; stats: PlanStats[]; spend: PlanStats['spend']; estimate: unknown; estimateOther: unknown; inbox: Record<string, unknown> };
    // What agents spent, by day and model, priced as each run was recorded: the default model of a step that names none, unpriced.
    expect(probe.spend).toEqual([
      { model: 'openai:mini', day: '2026-11-24', steps: 1, inputTokens: 2000, outputTokens: 100, costUsd: expect.closeTo((1600 * 0.15 + 400 * 0.075 + 100 * 0.6) / 1e6, 12), unpriced: 0 },
      { model: 'openai:big', day: '2026-11-23', steps: 1, inputTokens: 50, outputTokens: 100, costUsd: 0, unpriced: 1 },
      { model: 'openai:mini', day: '2026-11-23', steps: 1, inputTokens: 1000, outputTokens: 100, costUsd: expect.closeTo((600 * 0.15 + 400 * 0.075 + 100 * 0.6) / 1e6, 12), unpriced: 0 },
    ]);
    expect(renderPlanStats({ ...probe.stats[0], spend: probe.spend })).toContain('  spend by day and model:\n    2026-11-24 openai:mini: 1 step, 2000 tokens in, 100 out, $0.00033\n    2026-11-23 openai:big: 1 step, 50 tokens in, 100 out, no price');
    expect(probe.beforeLastPart).toEqual([]);
    const [stats] = probe.stats;
    expect(stats).toMatchObject({ plan: 'unit', runs: 2, completed: 1, failed: 1, cancelled: 0, p50Ms: 1000, p95Ms: 1000 });
    expect(stats.steps.map((s) => [s.step, s.runs, s.failureRate, s.retryRate, s.p50Ms])).toEqual([
      ['s0', 2, 0.5, 0.5, 100],
      ['s1', 1, 0, 0, 200],
      ['s2', 1, 0, 0, 300],
    ]);
    expect(stats.humanWaits).toEqual([{ step: 'a', kind: 'failure', waits: 2, answered: 2, timedOut: 0, p50Ms: 1500, p95Ms: 1500 }]);
    expect(probe.estimate).toEqual({ plan: 'unit', runs: 1, p50Ms: 1000, p95Ms: 1000 });
    expect(probe.estimateOther).toBeNull();
    // The inbox of a database not created yet: a reader creates it, takes both parts in and empties
    // the inbox; a file that is not a part is moved aside with a warning.
    expect(probe.inbox.pendingBefore).toEqual(['garbage.json', 's1.0.json', 's1.1000.json']);
    expect(probe.inbox.stats).toEqual([expect.objectContaining({ plan: 'spooled', runs: 1, completed: 1, steps: [expect.objectContaining({ step: 'a' }), expect.objectContaining({ step: 'b' })] })]);
    expect(probe.inbox.pendingAfter).toEqual([]);
    expect(probe.inbox.rejected).toEqual(['garbage.json']);
    expect(probe.inbox.warnings).toEqual([expect.stringContaining('garbage.json cannot be read')]);
  });

  test("a worker's process ends without waiting for its database writer, which takes the run in on its own", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-analytics-exit-'));
    const { stdout } = await exec(process.execPath, ['--import', TSX, path.join(__dirname, 'support', 'analytics-writer-exit.ts'), dir]);
    const writer = Number(stdout);
    expect(Number.isInteger(writer)).toBe(true);
    // Before, the writer's stderr pipe held the worker until the writer was done (5-20 s after its last part).
    expect(processAlive(writer)).toBe(true);
    await until('the database writer to finish', () => (processAlive(writer) ? undefined : true));
    expect(hasPending(dir)).toBe(false);
    expect(existsSync(path.join(dir, 'pgdata'))).toBe(true);
  });

  test('one process at a time: a reader waits for the holder, a dead holder\'s lock is taken over', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-lock-'));
    const lock = path.join(dir, 'lock');
    const release = await acquireLock(lock, { waitMs: 1000 });
    const waited: number[] = [];
    await expect(acquireLock(lock, { waitMs: 300, onWait: (pid) => waited.push(pid) })).rejects.toBeInstanceOf(LockBusyError);
    expect(waited).toEqual([process.pid]);
    setTimeout(() => void release(), 200);
    const again = await acquireLock(lock, { waitMs: 5000 });
    await again();
    // A pid no process has: the lock is stale.
    await writeFile(lock, '2147483646');
    await (await acquireLock(lock, { waitMs: 1000 }))();
    expect(existsSync(lock)).toBe(false);
  });

  test('nothing recorded yet: readers find nothing and create nothing', async () => {
    const empty: AnalyticsTarget = { kind: 'pglite', dir: path.join(os.tmpdir(), uniqueId('cadre-analytics-none')) };
    expect(await withAnalytics(empty, { waitMs: 1000 }, (q) => readStats(q))).toBeUndefined();
    expect(existsSync(empty.dir)).toBe(false);
  });

  test('the ETA: from the start and the median of past runs, or a note that the run takes longer', () => {
    const estimate = { plan: 'p', runs: 4, p50Ms: 120_000, p95Ms: 200_000 };
    const start = new Date(2026, 10, 23, 10, 0, 0);
    const line = etaLine(estimate, start.toISOString(), 30_000);
    expect(line).toBe(`ETA: ${new Date(2026, 10, 23, 10, 2, 0).toLocaleTimeString()}, about 1m30s left (median of 4 past completed runs of p: 2m0s)`);
    expect(etaLine(estimate, start.toISOString(), 150_000)).toBe('ETA: running longer than usual (median of 4 past completed runs of p: 2m0s; p95 3m20s)');
  });
});

const PLAN = `name: stats-demo
inputs:
  tag: { type: string }
  outcome: { type: string, default: ok }
steps:
  - { id: fetch-data, tool: shell, with: { command: "sleep 0.2; echo fetched" } }
  # Fails its first attempt in every run, then succeeds: retried in every run.
  - id: flaky
    dependsOn: [fetch-data]
    tool: shell
    retry: { maximumAttempts: 3, initialInterval: 100ms }
    with: { command: "test -f flaky-{{ inputs.tag }} || { touch flaky-{{ inputs.tag }}; exit 3; }; echo fine" }
  - { id: confirm, dependsOn: [flaky], ask: { question: "Ship {{ inputs.tag }}?", choices: [yes, no] } }
  - { id: ship, dependsOn: [confirm], tool: shell, retry: { maximumAttempts: 1 }, onFailure: abort, with: { command: "test {{ inputs.outcome }} = ok" } }
  - { id: never, dependsOn: [ship], when: "false", tool: shell, with: { command: "echo never" } }
`;

test('cadre worker records finished runs; cadre stats and cadre watch read them', async () => {
  const dir = tempWorkspace();
  const analyticsDir = path.join(dir, 'analytics');
  const taskQueue = uniqueId('stats');
  // Analytics as a user has them: on by default, in the embedded database (here in the test's own folder).
  const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: process.env.CADRE_TEST_ADDRESS, CADRE_TASK_QUEUE: taskQueue, CADRE_ANALYTICS_DIR: analyticsDir, CADRE_LOG_LEVEL: 'ERROR' };
  delete env.CADRE_ANALYTICS;
  writeFileSync(path.join(dir, 'plan.yaml'), PLAN);
  const worker = await startCadreWorker([], dir, env);
  const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
  try {
    const waitFor = (id: string, test: (d: Diagnostics) => boolean): Promise<Diagnostics> =>
      until(`run ${id}: ${test}`, async () => {
        const d = await client.diagnostics(id);
        return test(d) ? d : undefined;
      });
    const start = async (tag: string, outcome = 'ok'): Promise<string> => {
      const id = uniqueId(`stats-${tag}`);
      expect(await runCadre(['run', 'plan.yaml', '--id', id, '--input', `tag=${tag}`, '--input', `outcome=${outcome}`], dir, env)).toMatchObject({ code: 0 });
      return id;
    };
    // Three completed runs and one aborted one, each answered after a wait of its own length, and a
    // cancelled run (`temporal workflow cancel` would do the same): side by side, each on its own.
    const answered = ([['a', 'ok', 300], ['b', 'ok', 700], ['c', 'ok', 1100], ['d', 'bad', 200]] as const).map(async ([tag, outcome, waitMs]) => {
      const id = await start(tag, outcome);
      await waitFor(id, (d) => d.waiting.some((w) => w.id === 'confirm'));
      await new Promise((r) => setTimeout(r, waitMs));
      await client.answer(id, 'confirm', 'yes');
      return waitFor(id, (d) => d.status === 'completed' || d.status === 'failed');
    });
    const cancelled = (async () => {
      const id = await start('e');
      await waitFor(id, (d) => d.waiting.length > 0);
      await client.cancel(id);
      return waitFor(id, (d) => d.status === 'cancelled');
    })();
    const finished = await Promise.all([...answered, cancelled]);
    expect(finished.map((d) => d.status)).toEqual(['completed', 'completed', 'completed', 'failed', 'cancelled']);

    // Each run's end dropped its record into the database's inbox; the worker takes them in by itself.
    const inbox = path.join(analyticsDir, 'pending');
    await until(`the worker empties ${inbox}`, () => (existsSync(inbox) && readdirSync(inbox).length === 0) || undefined, 30_000);
    // The run's last step records the analytics after its status is final: wait for the fifth run in the database.
    const stats = await until('five runs recorded', async () => {
      const result = await runCadre(['stats', '--plan', 'stats-demo', '--json'], dir, env);
      expect(result).toMatchObject({ code: 0 });
      const read = JSON.parse(result.stdout) as PlanStats[];
      return read[0]?.runs === 5 ? read : undefined;
    }, 60_000, CLI_POLL_MS);
    const [plan] = stats;
    expect(plan).toMatchObject({ plan: 'stats-demo', runs: 5, completed: 3, failed: 1, cancelled: 1 });
    const completed = finished.filter((d) => d.status === 'completed');
    expect(plan.p50Ms).toBe(Math.round(percentile(completed.map((d) => d.elapsedMs), 0.5)));
    const byStep = Object.fromEntries(plan.steps.map((s) => [s.step, s]));
    expect(plan.steps.map((s) => s.step)).toEqual(['fetch-data', 'flaky', 'confirm', 'ship', 'never']);
    // Percentiles of the steps' own durations in those runs, computed here independently.
    const durations = (step: string) => finished.map((d) => d.steps.find((s) => s.id === step)!).filter((s) => s.status === 'completed').map((s) => s.durationMs!);
    for (const step of ['fetch-data', 'flaky', 'confirm']) {
      expect([byStep[step].p50Ms, byStep[step].p95Ms]).toEqual([Math.round(percentile(durations(step), 0.5)), Math.round(percentile(durations(step), 0.95))]);
    }
    expect(byStep['fetch-data']).toMatchObject({ tool: 'shell', runs: 5, completed: 5, failed: 0, failureRate: 0, retryRate: 0 });
    // Retried in each of the five runs: attempts 2 every time.
    expect(byStep.flaky).toMatchObject({ runs: 5, completed: 5, retried: 5, retryRate: 1 });
    expect(byStep.confirm).toMatchObject({ tool: 'ask', completed: 4, cancelled: 1 });
    expect(byStep.ship).toMatchObject({ completed: 3, failed: 1, failureRate: 0.25, cancelled: 1 });
    expect(byStep.never).toMatchObject({ skipped: 3, cancelled: 2 });
    expect(plan.humanWaits).toHaveLength(1);
    const waits = plan.humanWaits[0];
    expect(waits).toMatchObject({ step: 'confirm', kind: 'ask', waits: 4, answered: 4, timedOut: 0 });
    // The waits: at least as long as the test waited before answering, each a little more.
    expect(waits.p50Ms).toBeGreaterThanOrEqual(percentile([300, 700, 1100, 200], 0.5));
    expect(waits.p50Ms).toBeLessThan(percentile([300, 700, 1100, 200], 0.5) + 2000);

    // The table and a plan with no runs, read side by side (readers take the database in turn), while
    // a new run starts: it records nothing before it ends.
    const [table, none, id] = await Promise.all([runCadre(['stats', '--plan', 'stats-demo'], dir, env), runCadre(['stats', '--plan', 'nothing-like-it'], dir, env), start('f')]);
    expect(table.stdout).toContain('plan stats-demo: 5 runs (3 completed, 1 failed, 1 cancelled); completed in p50');
    expect(table.stdout).toMatch(/flaky\s+shell\s+5\s+\S+\s+\S+\s+0%\s+100%\s+0/);
    expect(table.stdout).toMatch(/ship\s+shell\s+5\s+\S+\s+\S+\s+25%\s+0%\s+0/);
    expect(table.stdout).toContain('confirm (ask): 4 waits, p50');
    expect(none.stdout).toBe(`no finished runs of plan "nothing-like-it" recorded in ${analyticsDir}\n`);

    // `cadre watch` of the new run gives its ETA from the three completed runs.
    const watch = spawnCadre(['watch', id], dir, env);
    let watched = '';
    watch.stdout!.on('data', (chunk: Buffer) => (watched += chunk.toString()));
    const watchEnded = exited(watch);
    await waitFor(id, (d) => d.waiting.length > 0);
    await until('an ETA from cadre watch', () => watched.includes('ETA') || undefined, 30_000);
    await client.answer(id, 'confirm', 'yes');
    // What it printed goes with its exit code: a failure shows why it ended so.
    expect({ code: await watchEnded, watched }).toMatchObject({ code: 0 });
    expect(watched).toMatch(/ETA: .*left \(median of 3 past completed runs of stats-demo: \S+\)|ETA: running longer than usual \(median of 3 past completed runs/);
  } finally {
    await client.close();
    await worker.stop();
  }
});

test('a plan of 1,001 steps is recorded in two parts, every step of it', async () => {
  const dir = tempWorkspace();
  const analyticsDir = path.join(dir, 'analytics');
  const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: process.env.CADRE_TEST_ADDRESS, CADRE_TASK_QUEUE: uniqueId('stats-many'), CADRE_ANALYTICS_DIR: analyticsDir, CADRE_LOG_LEVEL: 'ERROR' };
  delete env.CADRE_ANALYTICS;
  const steps = Array.from({ length: 1001 }, (_, i) => `  - { id: s${i}, when: "false", tool: shell, with: { command: "echo ${i}" } }`);
  writeFileSync(path.join(dir, 'plan.yaml'), `name: many-steps\nsteps:\n${steps.join('\n')}\n`);
  const worker = await startCadreWorker([], dir, env);
  try {
    expect(await runCadre(['run', 'plan.yaml', '--wait'], dir, env)).toMatchObject({ code: 0 });
    const stats = await until('the run recorded', async () => {
      const read = JSON.parse((await runCadre(['stats', '--json'], dir, env)).stdout) as PlanStats[];
      return read.length > 0 ? read : undefined;
    }, 60_000, CLI_POLL_MS);
    expect(stats).toHaveLength(1);
    expect(stats[0]).toMatchObject({ plan: 'many-steps', runs: 1, completed: 1 });
    expect(stats[0].steps).toHaveLength(1001);
    expect(stats[0].steps.every((s) => s.skipped === 1)).toBe(true);
    expect(stats[0].steps[1000].step).toBe('s1000');
  } finally {
    await worker.stop();
  }
});

test('with analytics off, runs end as before and cadre stats says so', async () => {
  const dir = tempWorkspace();
  const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: process.env.CADRE_TEST_ADDRESS, CADRE_ANALYTICS: 'off' };
  const result = await runCadre(['stats'], dir, env);
  expect(result).toMatchObject({ code: 1, stderr: 'cadre: run analytics are off (CADRE_ANALYTICS=off)\n' });
});

test('a database that cannot be reached costs the run nothing but a warning in the worker log', async () => {
  const dir = tempWorkspace();
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    TEMPORAL_ADDRESS: process.env.CADRE_TEST_ADDRESS,
    CADRE_TASK_QUEUE: uniqueId('stats-down'),
    CADRE_DATABASE_URL: `postgres://cadre:secret-password@127.0.0.1:${port}/cadre`,
  };
  delete env.CADRE_ANALYTICS;
  delete env.CADRE_LOG_LEVEL;
  writeFileSync(path.join(dir, 'plan.yaml'), 'name: no-database\nsteps:\n  - { id: hello, tool: shell, with: { command: "echo hi" } }\n');
  const worker = await startCadreWorker([], dir, env);
  try {
    const run = await runCadre(['run', 'plan.yaml', '--wait', '--json'], dir, env);
    expect(run).toMatchObject({ code: 0 });
    expect(JSON.parse(run.stdout)).toMatchObject({ status: 'completed', errors: [] });
    await until('a warning in the worker log', () => worker.stderr().includes('run analytics not recorded') || undefined, 30_000);
    const warning = worker.stderr().split('\n').find((l) => l.includes('run analytics not recorded'))!;
    expect(JSON.parse(warning)).toMatchObject({ level: 'warn', workflowType: 'runPlan', message: expect.stringContaining('ECONNREFUSED') });
    expect(warning).not.toContain('secret-password');
    // `cadre stats` says where it looked, without the password.
    const stats = await runCadre(['stats'], dir, env);
    expect(stats.code).toBe(1);
    expect(stats.stderr).toContain(`cannot read the analytics database at postgres://cadre:***@127.0.0.1:${port}/cadre`);
  } finally {
    await worker.stop();
  }
});
