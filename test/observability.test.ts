/**
 * What leaves a worker for a team's logging and metrics stack: JSON log lines naming the run, the
 * step and the attempt, and Prometheus metrics (the SDK's and cadre's own) from `cadre worker
 * --metrics-port`.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { LogEntry } from '@temporalio/worker';
import { jsonEntry, jsonLogs } from '../src/worker/logging';
import { freePort } from '../src/worker/ports';
import { runCadre, startCadreWorker } from './support/cli';
import { tempWorkspace, uniqueId } from './support/harness';

test('log format: JSON unless stderr is a terminal, or as CADRE_LOG_FORMAT says', () => {
  expect([jsonLogs({}, false), jsonLogs({}, true), jsonLogs({ CADRE_LOG_FORMAT: 'text' }, false), jsonLogs({ CADRE_LOG_FORMAT: 'JSON' }, true)]).toEqual([true, false, false, true]);
  const error = Object.assign(new Error('exit 3'), { type: 'ShellExit' });
  const entry: LogEntry = {
    level: 'WARN',
    message: 'Activity failed',
    timestampNanos: 1_795_400_000_123_000_000n,
    meta: { workflowId: 'plan-x', workflowRunId: 'r-1', activityId: 'enrich[2]', attempt: 3, activityType: 'runTool', taskToken: 'opaque', error },
  };
  expect(JSON.parse(jsonEntry(entry))).toEqual({
    time: '2026-11-23T02:13:20.123Z',
    level: 'warn',
    message: 'Activity failed',
    workflowId: 'plan-x',
    runId: 'r-1',
    step: 'enrich[2]',
    attempt: 3,
    activityType: 'runTool',
    error: { name: 'Error', type: 'ShellExit', message: 'exit 3' },
  });
});

async function scrape(url: string): Promise<string> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return response.text();
}

/** The value of one Prometheus series whose labels include all of `labels`. */
function series(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)/.exec(line);
    if (!match || match[1] !== name) continue;
    const have = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(match[3]);
  }
  return undefined;
}

test('cadre worker logs JSON lines with the run, step and attempt, and serves Prometheus metrics with cadre\'s own', async () => {
  const dir = tempWorkspace();
  const taskQueue = uniqueId('observed');
  const metricsPort = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: process.env.CADRE_TEST_ADDRESS, CADRE_TASK_QUEUE: taskQueue };
  delete env.CADRE_LOG_LEVEL;
  delete env.CADRE_LOG_FORMAT;
  writeFileSync(
    path.join(dir, 'plan.yaml'),
    `name: observed
steps:
  - { id: hello, tool: shell, with: { command: "echo hi" } }
  - { id: flaky-step, dependsOn: [hello], tool: shell, retry: { maximumAttempts: 2, initialInterval: 100ms }, onFailure: skip, with: { command: "echo nope >&2; exit 3" } }
  - { id: confirm, dependsOn: [hello], ask: { question: "Go?" } }
`,
  );
  const worker = await startCadreWorker(['--metrics-port', String(metricsPort)], dir, env);
  try {
    const id = uniqueId('observed');
    expect(await runCadre(['run', 'plan.yaml', '--id', id], dir, env)).toMatchObject({ code: 0 });
    for (let waiting = false; !waiting; ) {
      const status = await runCadre(['status', id, '--json'], dir, env);
      waiting = JSON.parse(status.stdout).waiting.length > 0;
      if (!waiting) await new Promise((r) => setTimeout(r, 200));
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(await runCadre(['answer', id, 'confirm', 'yes'], dir, env)).toMatchObject({ code: 0 });
    expect(await runCadre(['result', id], dir, env)).toMatchObject({ code: 0 });

    // Every line is JSON; the failed attempts name their run, step and attempt.
    const lines = worker.stderr().trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.find((l) => String(l.message).startsWith('worker running'))).toMatchObject({ level: 'info', metrics: `http://0.0.0.0:${metricsPort}/metrics` });
    const failures = lines.filter((l) => l.workflowId === id && l.step === 'flaky-step');
    expect(failures.map((l) => l.attempt)).toEqual([1, 2]);
    for (const line of failures) expect(line).toMatchObject({ level: 'warn', runId: expect.any(String), error: expect.objectContaining({ type: 'ShellExit' }) });

    const metrics = await scrape(`http://127.0.0.1:${metricsPort}/metrics`);
    expect(series(metrics, 'cadre_steps_started_total', { tool: 'shell', taskQueue })).toBe(2);
    expect(series(metrics, 'cadre_steps_completed_total', { tool: 'shell' })).toBe(1);
    expect(series(metrics, 'cadre_steps_skipped_total', { tool: 'shell' })).toBe(1);
    expect(series(metrics, 'cadre_steps_completed_total', { tool: 'ask' })).toBe(1);
    expect(series(metrics, 'cadre_run_duration_milliseconds_count', { plan: 'observed', status: 'completed' })).toBe(1);
    expect(series(metrics, 'cadre_human_wait_milliseconds_count', { kind: 'ask', outcome: 'answered' })).toBe(1);
    expect(series(metrics, 'cadre_human_wait_milliseconds_sum', { kind: 'ask' })).toBeGreaterThanOrEqual(300);
    // Buckets at human scale: a wait of seconds is not lumped with one of days.
    expect(series(metrics, 'cadre_run_duration_milliseconds_bucket', { plan: 'observed', le: '86400000' })).toBe(1);
    // The SDK's own, from the same endpoint.
    expect(series(metrics, 'temporal_activity_execution_failed_total', { activity_type: 'runTool' })).toBe(2);
  } finally {
    await worker.stop();
  }
});
