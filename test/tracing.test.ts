/**
 * OpenTelemetry traces from `cadre worker` with OTEL_EXPORTER_OTLP_ENDPOINT set, received by a
 * collector in this test (OTLP over HTTP, as the OpenTelemetry Collector takes it): a span for the
 * run, and for each step's activity, started and run, all in the run's trace.
 */
import http from 'node:http';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { runCadre, startCadreWorker } from './support/cli';
import { tempWorkspace, uniqueId } from './support/harness';

interface Span {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  attributes: { key: string; value: { stringValue?: string } }[];
}

/** An OTLP/HTTP trace receiver: keeps every span it is sent. */
async function startCollector() {
  const spans: Span[] = [];
  const services = new Set<string>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces' && req.headers['content-type']?.startsWith('application/json')) {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as { resourceSpans: { resource: { attributes: Span['attributes'] }; scopeSpans: { spans: Span[] }[] }[] };
        for (const rs of body.resourceSpans) {
          services.add(rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '');
          for (const ss of rs.scopeSpans) spans.push(...ss.spans);
        }
      }
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, services, close: () => new Promise<void>((r) => server.close(() => r())) };
}

const attr = (span: Span, key: string) => span.attributes.find((a) => a.key === key)?.value.stringValue;

test('a run and each step are spans of one trace, exported over OTLP', async () => {
  const collector = await startCollector();
  const dir = tempWorkspace();
  const taskQueue = uniqueId('traced');
  writeFileSync(path.join(dir, 'plan.yaml'), 'name: traced\nsteps:\n  - { id: fetch-data, tool: shell, with: { command: "echo a" } }\n  - { id: report, dependsOn: [fetch-data], tool: shell, with: { command: "echo b" } }\n');
  const env = { ...process.env, TEMPORAL_ADDRESS: process.env.CADRE_TEST_ADDRESS, CADRE_TASK_QUEUE: taskQueue, CADRE_LOG_LEVEL: 'ERROR', OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_BSP_SCHEDULE_DELAY: '200' };
  const worker = await startCadreWorker([], dir, env);
  try {
    const id = uniqueId('traced');
    expect((await runCadre(['run', 'plan.yaml', '--wait', '--id', id], dir, env)).code).toBe(0);
    const run = () => collector.spans.find((s) => s.name === 'RunWorkflow:runPlan' && attr(s, 'workflowId') === id);
    const ranStep = (step: string) => collector.spans.find((s) => s.name === 'RunActivity:runTool' && attr(s, 'temporalActivityId') === step && attr(s, 'temporalWorkflowId') === id);
    for (const until = Date.now() + 20_000; !(run() && ranStep('fetch-data') && ranStep('report')) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 200));
    const runSpan = run();
    expect(runSpan).toBeDefined();
    for (const step of ['fetch-data', 'report']) {
      const span = ranStep(step)!;
      expect(span).toMatchObject({ traceId: runSpan!.traceId });
      // Run under the workflow's StartActivity span, which is under the run's.
      const started = collector.spans.find((s) => s.spanId === span.parentSpanId);
      expect(started).toMatchObject({ name: 'StartActivity:runTool', traceId: runSpan!.traceId });
    }
    expect([...collector.services]).toEqual(['cadre-worker']);
  } finally {
    await worker.stop();
    await collector.close();
  }
});
