import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { compile, startPlan, step, tempWorkspace, withWorker } from './support/harness';

describe('file and HTTP tools in a plan', () => {
  let server: Server;
  let url: string;
  const received: { method?: string; body: string }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        received.push({ method: req.method, body });
        if (req.url === '/missing') {
          res.writeHead(404).end('no');
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echoed: body ? JSON.parse(body) : null }));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('fs.write, fs.read and http.request pass typed values between steps', async () => {
    const ws = tempWorkspace();
    const port = Number(new URL(url).port);
    const plan = compile(
      `
name: tools
inputs: { url: { type: string } }
egress: { loopback: [${port}] }
steps:
  - { id: write, tool: fs.write, with: { path: "data/items.json", content: { items: [1, 2, 3] } } }
  - { id: read, dependsOn: [write], tool: fs.read, with: { path: "data/items.json" } }
  - { id: post, tool: http.request, with: { url: "{{ inputs.url }}/echo", method: POST, body: { items: "{{ steps.read.output.json.items }}" } } }
  - { id: missing, onFailure: skip, tool: http.request, with: { url: "{{ inputs.url }}/missing" } }
output: { echoed: "{{ steps.post.output.json.echoed.items }}", status: "{{ steps.post.output.status }}" }
`,
      ws,
    );
    await withWorker(async (h) => {
      const d = await h.client.result(await startPlan(h, plan, { url }));
      expect(d.status).toBe('completed');
      expect(d.output).toEqual({ echoed: [1, 2, 3], status: 200 });
      expect(JSON.parse(readFileSync(path.join(ws, 'data', 'items.json'), 'utf8'))).toEqual({ items: [1, 2, 3] });
      expect(received).toContainEqual({ method: 'POST', body: '{"items":[1,2,3]}' });
      // A 404 is the request's fault: one attempt, no retries.
      expect(step(d, 'missing')).toMatchObject({ status: 'skipped', attempts: 1, error: expect.stringContaining('HttpClientError') });
    });
  });
});
