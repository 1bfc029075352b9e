/**
 * The OpenTelemetry half of ./tracing.ts, loaded only for a traced worker: traces through
 * Temporal's own interceptors (@temporalio/interceptors-opentelemetry), exported over OTLP/HTTP
 * when OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set: a span for each run
 * (`RunWorkflow:runPlan`), each activity it starts and runs (`StartActivity:runTool`,
 * `RunActivity:runTool`, whose `activity_id` is the step: cadre names activities after steps), each
 * signal, update and child workflow. The standard OTEL_* variables configure the exporter and batching.
 */
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OpenTelemetryPlugin } from '@temporalio/interceptors-opentelemetry';
import { packageVersion } from '../package-root';

export function startTracing(env: NodeJS.ProcessEnv): { plugin: OpenTelemetryPlugin; shutdown(): Promise<void> } {
  const spanProcessor = new BatchSpanProcessor(new OTLPTraceExporter());
  const resource = new Resource({ 'service.name': env.OTEL_SERVICE_NAME || 'cadre-worker', 'service.version': packageVersion() });
  // Workflow spans leave the sandbox through the plugin's sink; activity spans use the global
  // tracer, under the context the workflow sent in the activity's headers (W3C trace context).
  const provider = new BasicTracerProvider({ resource });
  provider.addSpanProcessor(spanProcessor);
  provider.register({ contextManager: new AsyncLocalStorageContextManager() });
  return { plugin: new OpenTelemetryPlugin({ resource, spanProcessor }), shutdown: () => provider.shutdown() };
}
