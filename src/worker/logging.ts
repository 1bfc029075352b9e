/**
 * Worker logs for people at a terminal: one line each, WARN and up unless CADRE_LOG_LEVEL says otherwise.
 * Call it before the first worker or native connection is created.
 */
import { DefaultLogger, type LogEntry, type LogLevel, Runtime, makeTelemetryFilterString } from '@temporalio/worker';

const LEVELS: LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];

let installed = false;

export function installConciseLogging(defaultLevel: LogLevel = 'WARN'): void {
  if (installed) return;
  installed = true;
  const wanted = (process.env.CADRE_LOG_LEVEL ?? '').toUpperCase() as LogLevel;
  const level = LEVELS.includes(wanted) ? wanted : defaultLevel;
  Runtime.install({
    logger: new DefaultLogger(level, (entry) => process.stderr.write(`${formatEntry(entry)}\n`)),
    // The SDK's native core logs to the console on its own unless forwarded: one format, one level.
    telemetryOptions: { logging: { forward: {}, filter: makeTelemetryFilterString({ core: level, other: level }) } },
    // cadre's commands handle Ctrl-C themselves: stop the worker, then the dev server.
    shutdownSignals: [],
  });
}

function formatEntry(entry: LogEntry): string {
  const meta = entry.meta ?? {};
  const error = meta.error as { message?: string; type?: string } | undefined;
  const where = [meta.workflowType, meta.activityType].filter(Boolean).join('/');
  return `worker ${entry.level.toLowerCase()}: ${entry.message}${where ? ` (${where})` : ''}${error?.message ? `: ${error.type ? `${error.type}: ` : ''}${error.message}` : ''}`;
}
