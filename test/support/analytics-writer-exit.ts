/**
 * A worker's analytics writer handed one run's record, then this process ends at once: prints the
 * pid of the database writer it started. Usage: tsx test/support/analytics-writer-exit.ts <dir>
 */
import { AnalyticsWriter } from '../../src/analytics/writer';

async function main(dir: string): Promise<void> {
  const writer = new AnalyticsWriter({ kind: 'pglite', dir }, (warning) => process.stderr.write(`${warning}\n`));
  await writer.record({
    workflowId: 'wf-exit',
    runId: 'exit',
    plan: 'writer-exit',
    status: 'completed',
    startedAt: '2026-11-27T10:00:00.000Z',
    endedAt: '2026-11-27T10:00:01.000Z',
    durationMs: 1000,
    steps: [{ id: 'a', position: 0, tool: 'shell', status: 'completed', attempts: 1, durationMs: 5 }],
    humanWaits: [],
    humanWaitsFrom: 0,
    final: true,
  });
  const child = (writer as unknown as { flusher: { child?: { pid?: number } } }).flusher.child;
  process.stdout.write(String(child?.pid));
}

void main(process.argv[2]);
