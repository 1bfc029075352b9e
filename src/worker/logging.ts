/**
 * The worker's runtime: its logs and its metrics. Logs are one line each, WARN and up unless
 * CADRE_LOG_LEVEL says otherwise: text for a person at a terminal, JSON lines when stderr is not
 * a TTY (containers, log shippers) or CADRE_LOG_FORMAT=json, each with the workflow id, run id,
 * step and attempt it is about. With a metrics address, the SDK's metrics and cadre's own
 * (workflows/plan/metrics.ts) are served for Prometheus at /metrics.
 * Call it before the first worker or native connection is created.
 */
import { DefaultLogger, type LogEntry, type LogLevel, Runtime, makeTelemetryFilterString } from '@temporalio/worker';

const LEVELS: LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];

export interface RuntimeSettings {
  /** host:port for Prometheus to scrape (`cadre worker --metrics-port`, CADRE_METRICS_PORT). */
  metricsAddress?: string;
}

/** Runs and human waits last seconds to days, not the SDK's default 50 ms-10 s. */
const HUMAN_SCALE_MS = [100, 1_000, 5_000, 30_000, 60_000, 300_000, 900_000, 3_600_000, 14_400_000, 86_400_000, 604_800_000];
const HUMAN_SCALE_BUCKETS = { cadre_run_duration: HUMAN_SCALE_MS, cadre_human_wait: HUMAN_SCALE_MS };

let installed = false;
let json = false;

export function installConciseLogging(defaultLevel: LogLevel = 'WARN', settings: RuntimeSettings = {}): void {
  if (installed) return;
  installed = true;
  const wanted = (process.env.CADRE_LOG_LEVEL ?? '').toUpperCase() as LogLevel;
  const level = LEVELS.includes(wanted) ? wanted : defaultLevel;
  json = jsonLogs();
  Runtime.install({
    logger: new DefaultLogger(level, (entry) => process.stderr.write(`${json ? jsonEntry(entry) : formatEntry(entry)}\n`)),
    // The SDK's native core logs to the console on its own unless forwarded: one format, one level.
    telemetryOptions: {
      logging: { forward: {}, filter: makeTelemetryFilterString({ core: level, other: level }) },
      ...(settings.metricsAddress && {
        metrics: { prometheus: { bindAddress: settings.metricsAddress, countersTotalSuffix: true, unitSuffix: true, histogramBucketOverrides: HUMAN_SCALE_BUCKETS } },
      }),
    },
    // cadre's commands handle Ctrl-C themselves: stop the worker, then the dev server.
    shutdownSignals: [],
  });
}

/** JSON lines unless a person reads them: CADRE_LOG_FORMAT=json|text, else JSON when stderr is not a terminal. */
export function jsonLogs(env: NodeJS.ProcessEnv = process.env, tty = Boolean(process.stderr.isTTY)): boolean {
  const format = (env.CADRE_LOG_FORMAT ?? '').toLowerCase();
  if (format === 'json' || format === 'text') return format === 'json';
  return !tty;
}

/** A status line of a long-running command (`cadre worker`): a log record when logs are JSON, else the text. */
export function statusLine(message: string, fields: Record<string, unknown> = {}): void {
  if (installed && json) process.stderr.write(`${JSON.stringify({ time: new Date().toISOString(), level: 'info', message, ...fields })}\n`);
  else process.stderr.write(`${message}\n`);
}

function formatEntry(entry: LogEntry): string {
  const meta = entry.meta ?? {};
  const error = meta.error as { message?: string; type?: string } | undefined;
  const where = [meta.workflowType, meta.activityType].filter(Boolean).join('/');
  return `worker ${entry.level.toLowerCase()}: ${entry.message}${where ? ` (${where})` : ''}${error?.message ? `: ${error.type ? `${error.type}: ` : ''}${error.message}` : ''}`;
}

/**
 * One JSON object per line. The SDK's metadata names the run (workflowId, workflowRunId or runId)
 * and, for an activity, its id (cadre names activities after their steps: `enrich[2]`) and attempt.
 */
export function jsonEntry(entry: LogEntry): string {
  const { error, workflowId, runId, workflowRunId, activityId, attempt, ...rest } = (entry.meta ?? {}) as Record<string, unknown>;
  const line: Record<string, unknown> = {
    time: new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString(),
    level: entry.level.toLowerCase(),
    message: entry.message,
    ...(workflowId !== undefined && { workflowId }),
    ...((runId ?? workflowRunId) !== undefined && { runId: runId ?? workflowRunId }),
    ...(activityId !== undefined && { step: activityId }),
    ...(attempt !== undefined && { attempt }),
    ...Object.fromEntries(Object.entries(rest).filter(([key, value]) => value !== undefined && key !== 'taskToken')),
  };
  if (error !== undefined) line.error = errorFields(error);
  return JSON.stringify(line);
}

function errorFields(error: unknown): Record<string, unknown> | string {
  if (!(error instanceof Error)) return String(error);
  const { type } = error as Error & { type?: string };
  return { name: error.name, ...(type && { type }), message: error.message };
}
