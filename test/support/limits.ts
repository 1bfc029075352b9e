/**
 * Runs near Temporal's per-run limits (test/run-limits.test.ts, test/team-limits.test.ts): a dev
 * server of their own whose limits are a twentieth of Temporal's defaults (500 signals a run, and
 * continue-as-new suggested at 300 events instead of 4,096), and what to count in histories.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { modelSettings } from '../../src/providers/config';
import { startDevServer, type TemporalServer } from '../../src/worker/dev-server';
import { registerSearchAttributes } from '../../src/worker/embedded';
import { type FakeModelServer, startFakeModelServer } from './fake-model-server';
import { type Harness, withWorker } from './harness';

export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** A twentieth of Temporal's 10,000 signals a run; Temporal suggests continuing as new at 300 events instead of 4,096. */
export const SIGNALS_LIMIT = 500;
export const LOW_LIMITS = { 'history.maximumSignalsPerExecution': SIGNALS_LIMIT, 'limit.historyCount.suggestContinueAsNew': 300 };

/** A dev server with other limits, its search attributes registered. */
export async function serverWith(dynamicConfig: Record<string, number>): Promise<TemporalServer> {
  const server = await startDevServer({ dataDir: mkdtempSync(path.join(os.tmpdir(), 'cadre-limits-')), ephemeral: true, dynamicConfig });
  await registerSearchAttributes(server, () => undefined);
  return server;
}

/**
 * A fake model server and a low-limits dev server for a test file: started before its tests,
 * stopped after them (the fields are set once beforeAll has run).
 */
export function lowLimitServers(): { models: FakeModelServer; low: TemporalServer } {
  const servers = {} as { models: FakeModelServer; low: TemporalServer };
  beforeAll(async () => {
    servers.models = await startFakeModelServer();
    servers.low = await serverWith(LOW_LIMITS);
  }, 120_000);
  afterAll(async () => {
    await servers.models?.close();
    await servers.low?.stop();
  });
  return servers;
}

/** Runs `fn` with a worker on `server` whose OpenAI models are the fake server's. */
export function onServer<T>(server: TemporalServer, models: FakeModelServer, fn: (h: Harness) => Promise<T>): Promise<T> {
  const settings = modelSettings({}, { OPENAI_API_KEY: 'sk-test-run-limits', OPENAI_BASE_URL: models.baseURL });
  return withWorker(fn, { activityDeps: { models: settings }, address: server.address });
}

/** Every event of every run of a workflow, the first run first (it may have continued as new). */
export async function allRuns(h: Harness, workflowId: string): Promise<HistoryEvent[][]> {
  const runs: HistoryEvent[][] = [];
  let runId: string | undefined;
  do {
    const events = (await h.client.client.workflow.getHandle(workflowId, runId).fetchHistory()).events ?? [];
    runs.unshift(events);
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  } while (runId);
  return runs;
}

export const words = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i} `);
export const signalsIn = (events: HistoryEvent[]) => events.filter((e) => e.workflowExecutionSignaledEventAttributes).length;
export const updatesIn = (events: HistoryEvent[]) => events.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
/** Signals a workflow sent that Temporal refused, with why. */
export const refused = (events: HistoryEvent[]) =>
  events.flatMap((e) => {
    const cause = e.signalExternalWorkflowExecutionFailedEventAttributes?.cause;
    return cause === undefined || cause === null ? [] : [temporal.api.enums.v1.SignalExternalWorkflowExecutionFailedCause[cause] ?? String(cause)];
  });
