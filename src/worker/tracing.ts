/**
 * OpenTelemetry traces through Temporal's own interceptors, when OTEL_EXPORTER_OTLP_ENDPOINT (or
 * ..._TRACES_ENDPOINT) is set (./tracing-setup.ts). Its modules (about 400, 0.15 s of a worker's
 * start) load only then.
 */
import type { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';

export interface Tracing {
  plugin: OpenTelemetryPlugin;
  /** Sends the spans still queued; call when the worker has stopped. */
  shutdown(): Promise<void>;
}

export async function tracingFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<Tracing | undefined> {
  if (!env.OTEL_EXPORTER_OTLP_ENDPOINT && !env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return undefined;
  const { startTracing } = await import('./tracing-setup');
  return startTracing(env);
}
