/**
 * Tools the worker brings: a TypeScript tool made with defineTool, and the tools of an MCP server
 * over stdio (the official SDK on both ends), called by an agent on the dev server.
 */
import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import path from 'node:path';
import { modelSettings } from '../src/providers/config';
import { type FakeModelServer, type RecordedRequest, startFakeModelServer } from './support/fake-model-server';
import { compile, startPlan, step, tempWorkspace, withWorker } from './support/harness';
import { TSX } from './support/tsx';
import { startMcpHttpServer } from './support/mcp-http';

let server: FakeModelServer;
beforeAll(async () => {
  server = await startFakeModelServer();
});
afterAll(() => server.close());

function toolResults(request: RecordedRequest): Record<string, string> {
  const messages = request.body.messages as { role: string; content?: unknown; tool_call_id?: string }[];
  return Object.fromEntries(messages.filter((m) => m.role === 'tool').map((m) => [m.tool_call_id as string, String(m.content)]));
}

test('an agent calls a TypeScript tool and an MCP server’s tools; bad arguments come back as errors', async () => {
  const ws = tempWorkspace();
  const notes = path.join(ws, 'notes.txt');
  const fixtures = path.join(__dirname, 'fixtures', 'tools');
  const customTools = {
    modules: [path.join(fixtures, 'weather.ts')],
    mcpServers: {
      notes: {
        command: process.execPath,
        args: ['--import', TSX, path.join(fixtures, 'notes-mcp-server.ts')],
        env: { NOTES_FILE: notes },
        // In the sandbox: it reads its code (and tsx) from this repository and writes only its notes.
        sandbox: { read: [path.resolve(__dirname, '..')], write: [ws] },
      },
    },
    baseDir: fixtures,
  };
  const models = modelSettings({}, { OPENAI_API_KEY: 'sk-test-tools', OPENAI_BASE_URL: server.baseURL });
  const plan = compile(
    `
name: custom-tools
steps:
  - id: note
    agent:
      prompt: "note the weather in Oslo"
      model: openai:gpt-4o-mini
      tools: [ts:lookup_weather, "mcp:notes/*", fs.read]
      approvals: { "mcp:notes/count_notes": deny }
`,
    ws,
  );
  server.enqueue(
    {
      toolCalls: [
        { id: 'w', name: 'lookup_weather', args: { city: 'Oslo' } },
        { id: 'n', name: 'notes__add_note', args: { text: 'snow in Oslo' } },
      ],
    },
    {
      toolCalls: [
        { id: 'bad', name: 'lookup_weather', args: { city: 5 } },
        { id: 'empty', name: 'notes__add_note', args: { text: '' } },
        { id: 'count', name: 'notes__count_notes', args: {} },
      ],
    },
    { text: 'noted' },
  );
  await withWorker(
    async (h) => {
      const id = await startPlan(h, plan);
      const d = await h.client.result(id);
      expect([d.status, d.reason]).toEqual(['completed', undefined]);
      expect(step(d, 'note').agent?.toolCalls).toBe(5);
    },
    { activityDeps: { models, customTools } },
  );
  const offered = (server.requests[0].body.tools as { function: { name: string; description: string; parameters: { properties: Record<string, unknown> } } }[]).map((t) => t.function);
  expect(offered.map((t) => t.name).sort()).toEqual(['fs_read', 'lookup_weather', 'notes__add_note', 'notes__count_notes']);
  expect(offered.find((t) => t.name === 'notes__add_note')).toMatchObject({ description: 'Add a note.', parameters: { properties: { text: { type: 'string' } } } });
  expect(offered.find((t) => t.name === 'lookup_weather')?.parameters.properties).toMatchObject({ city: { type: 'string' }, unit: { enum: ['C', 'F'] } });
  const first = toolResults(server.requests[1]);
  expect(JSON.parse(first.w)).toEqual({ city: 'Oslo', unit: 'C', forecast: 'snow', step: 'note' });
  expect(first.n).toBe('noted: snow in Oslo');
  const second = toolResults(server.requests[2]);
  expect(second.bad).toContain("do not match lookup_weather's schema: city");
  expect(second.empty).toContain("do not match notes__add_note's schema: text");
  expect(second.count).toContain('denied: the approval policy of this step denies mcp:notes/count_notes');
  expect(readFileSync(notes, 'utf8')).toBe('snow in Oslo\n');
  // The server saw exactly the calls that were allowed and valid.
  expect(readFileSync(`${notes}.calls`, 'utf8')).toBe('add_note\n');
  expect(existsSync(path.join(ws, 'lookup_weather'))).toBe(false);
});

test('an MCP server over streamable HTTP, its bearer token read from the environment', async () => {
  const token = 'mcp-token-5e1f';
  const seen: string[] = [];
  const http = await startMcpHttpServer(
    (mcp) =>
      mcp.registerTool('add', { description: 'Add two numbers.', inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
        content: [{ type: 'text', text: String(a + b) }],
        structuredContent: { sum: a + b },
      })),
    (req, res) => {
      seen.push(String(req.headers.authorization));
      if (req.headers.authorization === `Bearer ${token}`) return false;
      res.writeHead(401).end();
      return true;
    },
  );
  process.env.CADRE_TEST_MCP_TOKEN = `Bearer ${token}`;
  try {
    const ws = tempWorkspace();
    const customTools = {
      modules: [],
      mcpServers: { calc: { url: http.url, headersFromEnv: { Authorization: 'CADRE_TEST_MCP_TOKEN' } } },
      baseDir: ws,
    };
    const models = modelSettings({}, { OPENAI_API_KEY: 'sk-test-tools', OPENAI_BASE_URL: server.baseURL });
    const plan = compile(
      `
name: mcp-http
steps:
  - { id: sum, agent: { prompt: "add 2 and 3", model: "openai:gpt-4o-mini", tools: ["mcp:calc/add"] } }
  - { id: direct, dependsOn: [sum], tool: "mcp:calc/add", with: { a: 40, b: 2 } }
output: { agent: "{{ steps.sum.output }}", direct: "{{ steps.direct.output }}" }
`,
      ws,
    );
    const before = server.requests.length;
    server.enqueue({ toolCalls: [{ id: 'add', name: 'calc__add', args: { a: 2, b: 3 } }] }, { text: 'five' });
    await withWorker(
      async (h) => {
        const d = await h.client.result(await startPlan(h, plan));
        expect([d.status, d.reason]).toEqual(['completed', undefined]);
        expect(d.output).toEqual({ agent: 'five', direct: { sum: 42 } });
      },
      { activityDeps: { models, customTools } },
    );
    expect(JSON.parse(toolResults(server.requests[before + 1]).add)).toEqual({ sum: 5 });
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((h) => h === `Bearer ${token}`)).toBe(true);
  } finally {
    delete process.env.CADRE_TEST_MCP_TOKEN;
    await http.close();
  }
});
