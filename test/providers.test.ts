/**
 * The provider layer through the real AI SDK clients over HTTP to a fake model server,
 * and the scripted model from a scenario file.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { generateText, jsonSchema, tool } from 'ai';
import { z } from 'zod';
import { createActivities } from '../src/activities';
import { ErrorTypes } from '../src/errors/application-failures';
import { type ModelSettings, modelSettings, parseModelId, parseModelsSection, withToolCalls } from '../src/providers/config';
import { languageModel } from '../src/providers/registry';
import { type ToolCallMode, objectEnd } from '../src/providers/tool-call-modes';
import { retryAfterMs } from '../src/providers/errors';
import { type ModelTurnRequest, type ModelTurnResult, modelTurn } from '../src/providers/model-turn';
import { tryToolCallModes } from '../src/providers/mode-trials';
import { runCadre } from './support/cli';
import { type FakeModelServer, TEXT_TOOL_CALL_STYLES, type TextToolCallStyle, startFakeModelServer } from './support/fake-model-server';

const KEY = 'sk-test-SECRET-4f9a2c7e1b';
let server: FakeModelServer;
let settings: ModelSettings;

beforeAll(async () => {
  server = await startFakeModelServer();
  settings = modelSettings({ anthropic: { baseURL: server.baseURL } }, { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: server.baseURL, ANTHROPIC_API_KEY: KEY });
});
afterAll(() => server.close());
beforeEach(() => server.requests.splice(0));

async function failureOf(work: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await work.then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(ApplicationFailure);
  // No failure, whatever its cause, may carry the key into history.
  const failure = err as ApplicationFailure;
  expect(JSON.stringify({ message: failure.message, details: failure.details, stack: failure.stack })).not.toContain(KEY);
  return failure;
}

const hello: ModelTurnRequest = { model: 'openai:gpt-4o-mini', system: 'Be brief.', messages: [{ role: 'user', content: 'Say hi' }] };

test('an OpenAI text turn, streamed to a listener piece by piece, with the key as bearer', async () => {
  server.enqueue({ text: 'hi there', chunks: ['hi', ' the', 're'], usage: { inputTokens: 12, outputTokens: 3 } });
  const heard: string[] = [];
  const result = await modelTurn(hello, settings, undefined, { textDelta: (text) => heard.push(text) });
  expect(result).toEqual({ text: 'hi there', toolCalls: [], finishReason: 'stop', usage: { inputTokens: 12, outputTokens: 3 } });
  expect(heard).toEqual(['hi', ' the', 're']);
  const [request] = server.requests;
  expect(request.path).toBe('/v1/chat/completions');
  expect(request.body.stream).toBe(true);
  expect(request.headers.authorization).toBe(`Bearer ${KEY}`);
  expect(request.body.messages).toEqual([{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Say hi' }]);
  expect(JSON.stringify(result)).not.toContain(KEY);
});

test('an Anthropic text turn', async () => {
  server.enqueue({ text: 'hello from claude', usage: { inputTokens: 7, outputTokens: 4 } });
  const result = await modelTurn({ ...hello, model: 'anthropic:claude-sonnet-4-5' }, settings);
  expect(result).toEqual({ text: 'hello from claude', toolCalls: [], finishReason: 'stop', usage: { inputTokens: 7, outputTokens: 4 } });
  const [request] = server.requests;
  expect(request.path).toBe('/v1/messages');
  expect(request.headers['x-api-key']).toBe(KEY);
  expect(request.body.system).toEqual([{ type: 'text', text: 'Be brief.' }]);
  expect(request.body.messages).toEqual([{ role: 'user', content: [{ type: 'text', text: 'Say hi' }] }]);
});

const readFileInput = z.object({ path: z.string().describe('file to read'), maxBytes: z.int().positive().optional() });
const tools = [
  { name: 'read_file', description: 'Read a file', inputSchema: z.toJSONSchema(readFileInput) as Record<string, unknown> },
  { name: 'list_dir', description: 'List a directory', inputSchema: z.toJSONSchema(z.object({ dir: z.string() })) as Record<string, unknown> },
];

test.each(['openai:gpt-4o-mini', 'anthropic:claude-sonnet-4-5'])('%s: two parallel tool calls come back, tools go out as JSON Schema', async (model) => {
  server.enqueue({
    toolCalls: [
      { id: 'call_a', name: 'read_file', args: { path: 'a.txt' } },
      { id: 'call_b', name: 'list_dir', args: { dir: 'src' } },
    ],
  });
  const result = await modelTurn({ model, messages: [{ role: 'user', content: 'look around' }], tools }, settings);
  expect(result.toolCalls).toEqual([
    { id: 'call_a', name: 'read_file', args: { path: 'a.txt' } },
    { id: 'call_b', name: 'list_dir', args: { dir: 'src' } },
  ]);
  expect(result.finishReason).toBe('tool-calls');
  const sent = server.requests[0].body.tools as Record<string, unknown>[];
  const schemaOf = (name: string) => {
    const t = sent.find((x) => (x.function as { name?: string } | undefined)?.name === name || x.name === name)!;
    return (t.function as { parameters?: unknown } | undefined)?.parameters ?? t.input_schema;
  };
  expect(schemaOf('read_file')).toMatchObject({
    type: 'object',
    properties: { path: { type: 'string', description: 'file to read' }, maxBytes: { type: 'integer', exclusiveMinimum: 0 } },
    required: ['path'],
  });
  expect(schemaOf('list_dir')).toMatchObject({ type: 'object', properties: { dir: { type: 'string' } } });
});

test('tool calls the model made up are returned with the reason they cannot run', async () => {
  server.enqueue({
    toolCalls: [
      { id: 'c1', name: 'rm_rf', args: { path: '/' } },
      { id: 'c2', name: 'read_file', args: { path: 42 } },
      { id: 'c3', name: 'read_file', args: '{"path": "a.txt"' },
      { id: 'c4', name: 'read_file', args: { path: 'ok.txt' } },
    ],
  });
  const result = await modelTurn({ ...hello, tools }, settings);
  expect(result.toolCalls).toEqual([
    { id: 'c1', name: 'rm_rf', args: { path: '/' }, error: 'no tool named "rm_rf" was offered (offered: read_file, list_dir)' },
    { id: 'c2', name: 'read_file', args: { path: 42 }, error: expect.stringMatching(/^the arguments do not match read_file's schema: path: .*string/) },
    { id: 'c3', name: 'read_file', args: {}, error: 'the arguments are not a JSON object: {"path": "a.txt"' },
    { id: 'c4', name: 'read_file', args: { path: 'ok.txt' } },
  ]);
});

test('tool results go back to the provider as tool messages', async () => {
  server.enqueue({ text: 'a.txt says hello' });
  await modelTurn(
    {
      model: 'openai:gpt-4o-mini',
      messages: [
        { role: 'user', content: 'read a.txt' },
        { role: 'assistant', toolCalls: [{ id: 'call_a', name: 'read_file', args: { path: 'a.txt' } }] },
        { role: 'tool', toolCallId: 'call_a', toolName: 'read_file', result: { content: 'hello' } },
      ],
      tools,
    },
    settings,
  );
  const messages = server.requests[0].body.messages as Record<string, unknown>[];
  expect(messages[1]).toMatchObject({ role: 'assistant', tool_calls: [{ id: 'call_a', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } }] });
  expect(messages[2]).toEqual({ role: 'tool', tool_call_id: 'call_a', content: '{"content":"hello"}' });
});

test('429 with Retry-After: 2 is retryable after 2 s', async () => {
  server.enqueue({ status: 429, headers: { 'retry-after': '2' }, body: { error: { message: 'Rate limit reached', type: 'rate_limit' } } });
  const failure = await failureOf(modelTurn(hello, settings));
  expect(failure.type).toBe(ErrorTypes.ModelRateLimited);
  expect(failure.nonRetryable).toBe(false);
  expect(failure.nextRetryDelay).toBe(2000);
  expect(server.requests).toHaveLength(1); // the AI SDK did not retry on its own
});

test('Retry-After as an HTTP date, in milliseconds, or too long', () => {
  const now = Date.parse('Sun, 22 Nov 2026 12:00:00 GMT');
  expect(retryAfterMs({ 'Retry-After': 'Sun, 22 Nov 2026 12:00:05 GMT' }, now)).toBe(5000);
  expect(retryAfterMs({ 'retry-after': 'soon' }, now)).toBeUndefined();
  expect(retryAfterMs({ 'retry-after-ms': '1500', 'retry-after': '2' }, now)).toBe(1500);
  expect(retryAfterMs({ 'retry-after': '99999999999' }, now)).toBe(3_600_000);
});

test('500 is retryable', async () => {
  server.enqueue({ status: 500, body: { error: { message: 'boom' } } });
  const failure = await failureOf(modelTurn(hello, settings));
  expect(failure.type).toBe(ErrorTypes.ModelUnavailable);
  expect(failure.nonRetryable).toBe(false);
});

test('a 200 whose body cannot be read (cut short, not JSON, not a completion) is retryable', async () => {
  const bodies = ['{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"mess', '<html><body>502 Bad Gateway</body></html>', '{"unexpected": true}', ''];
  for (const raw of bodies) {
    server.enqueue({ status: 200, raw });
    const failure = await failureOf(modelTurn(hello, settings));
    expect({ raw, type: failure.type, nonRetryable: failure.nonRetryable }).toEqual({ raw, type: ErrorTypes.ModelUnavailable, nonRetryable: false });
    expect(failure.message).toMatch(/^openai:gpt-4o-mini: the provider/);
  }
  // Anthropic's client reads its answers the same way.
  server.enqueue({ status: 200, raw: '{"id":"msg_1","type":"message","content":[{"type":"te' });
  const failure = await failureOf(modelTurn({ ...hello, model: 'anthropic:claude-3-5-haiku-latest' }, settings));
  expect({ type: failure.type, nonRetryable: failure.nonRetryable }).toEqual({ type: ErrorTypes.ModelUnavailable, nonRetryable: false });
});

test('401 is not retryable, names the fix and never repeats the key', async () => {
  // The fake echoes the whole key, as a careless provider might.
  server.enqueue({ status: 401, body: { error: { message: `Incorrect API key provided: ${KEY}`, type: 'invalid_request_error', code: 'invalid_api_key' } } });
  const failure = await failureOf(modelTurn(hello, settings));
  expect(failure.type).toBe(ErrorTypes.ModelAuthFailed);
  expect(failure.nonRetryable).toBe(true);
  expect(failure.message).toContain('set OPENAI_API_KEY');
  expect(JSON.stringify({ message: failure.message, details: failure.details, stack: failure.stack })).not.toContain(KEY);
});

test('a 400 that echoes the key is scrubbed; context length and unknown model name their fix', async () => {
  server.enqueue(
    { status: 400, body: { error: { message: `This model's maximum context length is 128000 tokens (key ${KEY})`, code: 'context_length_exceeded' } } },
    { status: 404, body: { error: { message: 'The model `gpt-9` does not exist', code: 'model_not_found' } } },
  );
  const tooLong = await failureOf(modelTurn(hello, settings));
  expect(tooLong.type).toBe(ErrorTypes.ModelContextTooLong);
  expect(tooLong.nonRetryable).toBe(true);
  expect(tooLong.message).not.toContain(KEY);
  const unknown = await failureOf(modelTurn({ ...hello, model: 'openai:gpt-9' }, settings));
  expect(unknown.type).toBe(ErrorTypes.ModelNotFound);
  expect(unknown.nonRetryable).toBe(true);
  expect(unknown.message).toContain('check the model name');
});

test('a provider nobody listens on is retryable', async () => {
  const closed = modelSettings({}, { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' });
  const failure = await failureOf(modelTurn(hello, closed));
  expect(failure.type).toBe(ErrorTypes.ModelUnavailable);
  expect(failure.nonRetryable).toBe(false);
});

const verdict = { type: 'object', properties: { ok: { type: 'boolean' }, score: { type: 'number' } }, required: ['ok', 'score'], additionalProperties: false };

test.each(['openai:gpt-4o-mini', 'anthropic:claude-sonnet-4-5'])('%s: structured output is asked for with the schema, parsed and checked', async (model) => {
  server.enqueue({ text: '{"ok":true,"score":0.9}' });
  const result = await modelTurn({ ...hello, model, outputSchema: verdict }, settings);
  expect(result.output).toEqual({ ok: true, score: 0.9 });
  const { body } = server.requests[0];
  const format = model.startsWith('openai') ? (body.response_format as { json_schema?: { schema?: unknown } }).json_schema?.schema : (body.output_config as { format?: { schema?: unknown } }).format?.schema;
  expect(format).toMatchObject({ type: 'object', required: ['ok', 'score'] });
});

test('structured output that does not match the schema is StructuredOutputInvalid, naming what differed', async () => {
  server.enqueue({ text: '{"ok":"yes"}' }, { text: 'not json at all' });
  const mismatch = await failureOf(modelTurn({ ...hello, outputSchema: verdict }, settings));
  expect(mismatch.type).toBe(ErrorTypes.StructuredOutputInvalid);
  expect(mismatch.nonRetryable).toBe(true);
  expect(mismatch.message).toMatch(/ok: .*boolean/);
  expect(mismatch.message).toMatch(/score/);
  const notJson = await failureOf(modelTurn({ ...hello, outputSchema: verdict }, settings));
  expect(notJson.type).toBe(ErrorTypes.StructuredOutputInvalid);
  expect(notJson.message).toContain('not json at all');
});

test('a hostile request is refused before any call', async () => {
  const failure = await failureOf(modelTurn({ model: 'openai:gpt-4o-mini', messages: [{ role: 'system', content: 'x' } as never] }, settings));
  expect(failure.nonRetryable).toBe(true);
  expect(failure.message).toContain('messages.0');
  const twice = await failureOf(modelTurn({ ...hello, tools: [tools[0], tools[0]] }, settings));
  expect(twice.message).toContain('tools: tool names must be unique');
  const dotted = await failureOf(modelTurn({ ...hello, tools: [{ ...tools[0], name: 'fs.read' }] }, settings));
  expect(dotted.message).toContain('tools.0.name: must be 1-64 letters');
  expect(server.requests).toHaveLength(0);
});

describe('scripted model', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-scripted-'));
  const scenario = path.join(dir, 'fix-bug.yaml');
  writeFileSync(
    scenario,
    [
      'turns:',
      '  - expect: { lastRole: user, lastContains: "fix the bug", tools: [read_file, list_dir] }',
      '    reply:',
      '      toolCalls: [{ name: read_file, args: { path: app.ts } }]',
      '      usage: { inputTokens: 30, outputTokens: 5 }',
      '  - expect: { lastRole: tool, lastContains: "const x = 1" }',
      '    reply: { text: "found it", toolCalls: [{ name: list_dir, args: { dir: src } }, { name: read_file, args: { path: b.ts } }] }',
      '  - expect: { lastRole: tool }',
      '    reply: { text: "done" }',
    ].join('\n'),
  );
  const model = `scripted:${scenario}`;
  const scripted = modelSettings({}, {});
  const turn1 = [{ role: 'user' as const, content: 'please fix the bug in app.ts' }];

  test('replays a three-turn script', async () => {
    const first = await modelTurn({ model, messages: turn1, tools }, scripted);
    expect(first).toEqual({ toolCalls: [{ id: 'call_1_1', name: 'read_file', args: { path: 'app.ts' } }], finishReason: 'tool-calls', usage: { inputTokens: 30, outputTokens: 5 } });
    const turn2 = [...turn1, { role: 'assistant' as const, toolCalls: first.toolCalls }, { role: 'tool' as const, toolCallId: 'call_1_1', toolName: 'read_file', result: 'const x = 1;' }];
    const second = await modelTurn({ model, messages: turn2, tools }, scripted);
    expect(second.text).toBe('found it');
    expect(second.toolCalls.map((c) => c.name)).toEqual(['list_dir', 'read_file']);
    const turn3 = [
      ...turn2,
      { role: 'assistant' as const, content: 'found it', toolCalls: second.toolCalls },
      ...second.toolCalls.map((c) => ({ role: 'tool' as const, toolCallId: c.id, toolName: c.name, result: { ok: true } })),
    ];
    const third = await modelTurn({ model, messages: turn3, tools }, scripted);
    expect(third).toEqual({ text: 'done', toolCalls: [], finishReason: 'stop', usage: { inputTokens: 0, outputTokens: 0 } });
    // Deterministic: the same conversation gets the same answer again (a retried activity).
    expect(await modelTurn({ model, messages: turn2, tools }, scripted)).toEqual(second);
    const exhausted = await failureOf(modelTurn({ model, messages: [...turn3, { role: 'assistant', content: 'done' }, { role: 'user', content: 'more?' }] }, scripted));
    expect(exhausted.type).toBe(ErrorTypes.ScriptMismatch);
    expect(exhausted.message).toContain('turn 4 of 3: the script is exhausted');
  });

  test('fails honestly when the conversation departs from the script', async () => {
    const wrongText = await failureOf(modelTurn({ model, messages: [{ role: 'user', content: 'write a poem' }], tools }, scripted));
    expect(wrongText.type).toBe(ErrorTypes.ScriptMismatch);
    expect(wrongText.nonRetryable).toBe(true);
    expect(wrongText.message).toContain('turn 1 of 3: expected the last message to contain "fix the bug", got user message "write a poem"');
    const wrongTools = await failureOf(modelTurn({ model, messages: turn1, tools: tools.slice(0, 1) }, scripted));
    expect(wrongTools.message).toContain('turn 1 of 3: expected tools [list_dir, read_file], offered [read_file]');
  });

  test('a cycling script starts again after its last turn, and still checks each turn', async () => {
    const cycling = path.join(dir, 'cycle.yaml');
    writeFileSync(cycling, 'cycle: true\nturns:\n  - expect: { lastRole: user }\n    reply: { text: odd }\n  - expect: { lastRole: user }\n    reply: { text: even }\n');
    const say = (assistants: number) =>
      modelTurn({ model: `scripted:${cycling}`, messages: [...Array.from({ length: assistants }, () => ({ role: 'assistant' as const, content: 'x' })), { role: 'user', content: 'hi' }] }, scripted);
    expect((await Promise.all([0, 1, 2, 3, 10].map(say))).map((t) => t.text)).toEqual(['odd', 'even', 'odd', 'even', 'odd']);
    const departed = await failureOf(modelTurn({ model: `scripted:${cycling}`, messages: [{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'x' }] }, scripted));
    expect(departed.message).toContain('turn 2 of 2: expected the last message from user, got assistant');
  });

  test('a scenario edited between turns is read anew (parsed scenarios are kept only while the file is unchanged)', async () => {
    const edited = path.join(dir, 'edited.yaml');
    writeFileSync(edited, 'turns:\n  - reply: { text: before }\n');
    const ask = () => modelTurn({ model: `scripted:${edited}`, messages: turn1 }, scripted);
    expect((await ask()).text).toBe('before');
    expect((await ask()).text).toBe('before');
    writeFileSync(edited, 'turns:\n  - reply: { text: after }\n');
    expect((await ask()).text).toBe('after');
    writeFileSync(edited, 'turns: []\n');
    expect((await failureOf(ask())).type).toBe(ErrorTypes.ModelConfigInvalid);
  });

  test('a scenario that is not valid names its path', async () => {
    const bad = path.join(dir, 'bad.yaml');
    writeFileSync(bad, 'turns:\n  - reply: { toolCalls: [{ args: {} }] }\n');
    const failure = await failureOf(modelTurn({ model: `scripted:${bad}`, messages: turn1 }, scripted));
    expect(failure.type).toBe(ErrorTypes.ModelConfigInvalid);
    expect(failure.message).toContain('turns[0].reply.toolCalls[0].name');
  });
});

describe('config', () => {
  test('errors name their path', () => {
    const yaml = ['models:', '  openai: { baseURL: "ftp://x" }', '  compatible:', '    local: { apiKey: "sk-oops" }'].join('\n');
    const err = (() => {
      try {
        parseModelsSection(yaml);
      } catch (e) {
        return e as ApplicationFailure;
      }
      throw new Error('expected a failure');
    })();
    expect(err.type).toBe(ErrorTypes.ModelConfigInvalid);
    expect(err.message).toContain('models.openai.baseURL: must be an http(s) URL');
    expect(err.message).toContain('models.compatible.local.baseURL');
    expect(err.message).toContain('models.compatible.local.apiKey: keys do not go in config files');
    expect(err.message).not.toContain('sk-oops');
  });

  test('CADRE_MODEL is the default model and must be provider:model', async () => {
    expect(() => modelSettings({}, { CADRE_MODEL: 'gpt-4o' })).toThrow(/CADRE_MODEL: "gpt-4o" is not provider:model/);
    server.enqueue({ text: 'from the default' });
    const withDefault = modelSettings({}, { CADRE_MODEL: 'openai:gpt-4o-mini', OPENAI_API_KEY: KEY, OPENAI_BASE_URL: server.baseURL });
    expect((await modelTurn({ messages: [{ role: 'user', content: 'hi' }] }, withDefault)).text).toBe('from the default');
    expect(server.requests[0].body.model).toBe('gpt-4o-mini');
  });

  test('a missing key names the variable to set', async () => {
    const failure = await failureOf(modelTurn(hello, modelSettings({}, {})));
    expect(failure.type).toBe(ErrorTypes.ModelConfigInvalid);
    expect(failure.message).toContain('set OPENAI_API_KEY');
  });

  test('an openai-compatible endpoint from the config file', async () => {
    const section = parseModelsSection(`models:\n  compatible:\n    local: { baseURL: "${server.baseURL}", model: llama3 }\n`);
    server.enqueue({ text: 'local hello' });
    const result = await modelTurn({ ...hello, model: 'openai-compatible:local' }, modelSettings(section, {}));
    expect(result.text).toBe('local hello');
    expect(server.requests[0].body.model).toBe('llama3');
  });
});

describe('the modelTurn activity', () => {
  test('registered in createActivities, it answers through the configured provider', async () => {
    const { modelTurn: activity } = createActivities({ models: settings });
    server.enqueue({ text: 'via the activity', usage: { inputTokens: 2, outputTokens: 3 } });
    const result = await new MockActivityEnvironment().run(activity, hello);
    expect(result).toEqual({ text: 'via the activity', toolCalls: [], finishReason: 'stop', usage: { inputTokens: 2, outputTokens: 3 } });
  });

  test('cancelling the activity aborts the HTTP request', async () => {
    const { modelTurn: activity } = createActivities({ models: settings });
    server.enqueue({ hangMs: 30_000 });
    const env = new MockActivityEnvironment();
    const started = Date.now();
    const running = env.run(activity, hello);
    while (server.requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    env.cancel();
    await expect(running).rejects.toBeDefined();
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  test('a bad cadre.config.yaml fails the activity with its path, not retryable', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-config-'));
    const configPath = path.join(dir, 'cadre.config.yaml');
    writeFileSync(configPath, 'models:\n  default: gpt-4o\n');
    const { modelTurn: activity } = createActivities({ configPath });
    const noModel: ModelTurnRequest = { messages: [{ role: 'user', content: 'hi' }] };
    const failure = await failureOf(new MockActivityEnvironment().run(activity, noModel));
    expect(failure.type).toBe(ErrorTypes.ModelConfigInvalid);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('models.default: "gpt-4o" is not provider:model');
  });
});

describe('tool calls written as text (models.compatible.<endpoint>.toolCalls)', () => {
  const local = (toolCalls: ToolCallMode = 'native', env: Record<string, string> = {}) =>
    modelSettings({ compatible: { local: { baseURL: server.baseURL, model: 'qwen2.5-coder-1.5b', toolCalls, ...(env.LOCAL_KEY && { apiKeyEnv: 'LOCAL_KEY' }) } } }, env);
  const model = 'openai-compatible:local';
  const write = { id: 'w', name: 'fs_write', args: { path: 'summary.txt', content: 'one <line> & "quotes"\nand two' } };
  const fsTools = [
    { name: 'fs_read', description: 'Read a file', inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } },
    { name: 'fs_write', description: 'Write a file', inputSchema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'] } },
  ];
  const ask: ModelTurnRequest = { model, messages: [{ role: 'user', content: 'summarise notes.txt into summary.txt' }], tools: fsTools };
  const modes: [Exclude<ToolCallMode, 'native'>, TextToolCallStyle[]][] = [
    ['json', ['tool-call-tags', 'json-block']],
    ['xml', ['xml']],
    ['qwen', ['qwen']],
  ];

  test.each(modes)('%s: its styles become tool calls, streamed in pieces that cut through the tags; the tools go in the system prompt', async (mode, styles) => {
    for (const style of styles) {
      server.requests.splice(0);
      server.enqueue({ text: 'Writing it now.', toolCalls: [write], toolCallsAs: style, usage: { inputTokens: 40, outputTokens: 30 } });
      const heard: string[] = [];
      const turn = await modelTurn(ask, local(mode), undefined, { textDelta: (text) => heard.push(text) });
      expect({ style, turn }).toEqual({
        style,
        turn: { text: 'Writing it now.\n', toolCalls: [{ id: expect.any(String), name: 'fs_write', args: write.args }], finishReason: 'tool-calls', usage: { inputTokens: 40, outputTokens: 30 } },
      });
      // The listener (the run's stream) hears the words, never the markup.
      expect(heard.join('')).toBe('Writing it now.\n');
      const { body } = server.requests[0];
      expect(body.stream).toBe(true);
      expect(body.tools).toBeUndefined();
      const messages = body.messages as { role: string; content: string }[];
      expect(messages[0].role).toBe('system');
      expect(messages[0].content).toContain('fs_write');
    }
  });

  test.each(modes)('%s: not streamed (generateText on the configured client), the same calls are read', async (mode, styles) => {
    for (const style of styles) {
      server.enqueue({ text: 'Writing it now.', toolCalls: [write], toolCallsAs: style });
      const result = await generateText({
        model: languageModel(parseModelId(model), local(mode)),
        prompt: 'summarise notes.txt',
        tools: Object.fromEntries(fsTools.map((t) => [t.name, tool({ description: t.description, inputSchema: jsonSchema(t.inputSchema as Parameters<typeof jsonSchema>[0]) })])),
      });
      expect({ style, calls: result.toolCalls.map((c) => [c.toolName, c.input]) }).toEqual({ style, calls: [['fs_write', write.args]] });
      expect(server.requests.at(-1)?.body.stream).toBeUndefined();
    }
  });

  test('json: an answer that is nothing but a call object (no tags, no fence) is that call, streamed or not; one that only starts like it streams on as text', async () => {
    server.enqueue({ toolCalls: [write], toolCallsAs: 'bare-json', usage: { inputTokens: 40, outputTokens: 30 } });
    const heard: string[] = [];
    const turn = await modelTurn(ask, local('json'), undefined, { textDelta: (text) => heard.push(text) });
    expect(turn).toEqual({ toolCalls: [{ id: expect.any(String), name: 'fs_write', args: write.args }], finishReason: 'tool-calls', usage: { inputTokens: 40, outputTokens: 30 } });
    expect(heard).toEqual([]);
    // Not streamed, the library's own JSON recovery reads the same answer.
    server.enqueue({ toolCalls: [write], toolCallsAs: 'bare-json' });
    const tools = Object.fromEntries(fsTools.map((t) => [t.name, tool({ description: t.description, inputSchema: jsonSchema(t.inputSchema as Parameters<typeof jsonSchema>[0]) })]));
    const generated = await generateText({ model: languageModel(parseModelId(model), local('json')), prompt: 'summarise notes.txt', tools });
    expect(generated.toolCalls.map((c) => [c.toolName, c.input])).toEqual([['fs_write', write.args]]);
    // An object that is not a call of an offered tool, or a call with words around it, is text, heard whole.
    const notCalls = ['{"verdict": "ok", "reasons": ["short"]}', '{"name": "rm_rf", "arguments": {"path": "/"}}', `I will write it.\n${JSON.stringify({ name: 'fs_write', arguments: write.args })}`];
    for (const text of notCalls) {
      server.enqueue({ text, chunks: text.match(/[\s\S]{1,4}/g) ?? [] });
      const heardText: string[] = [];
      const answer = await modelTurn(ask, local('json'), undefined, { textDelta: (piece) => heardText.push(piece) });
      expect({ text, calls: answer.toolCalls, answer: answer.text, heard: heardText.join('') }).toEqual({ text, calls: [], answer: text, heard: text });
    }
    // The call among words is not run, and the guard sees it.
    expect((await (server.enqueue({ text: notCalls[2] }), modelTurn(ask, local('json')))).unparsedToolCall).toMatchObject({ tool: 'fs_write', style: 'json' });
  });

  test('every text mode reads a reply that opens with a bare call followed by words: the call runs, the words stay the text', async () => {
    const call = JSON.stringify({ name: 'fs_write', arguments: write.args });
    for (const mode of ['json', 'xml', 'qwen'] as const) {
      const text = `${call}\nThis writes the summary {as asked}.`;
      server.enqueue({ text, chunks: text.match(/[\s\S]{1,6}/g) ?? [] });
      const heard: string[] = [];
      const turn = await modelTurn(ask, local(mode), undefined, { textDelta: (piece) => heard.push(piece) });
      expect({ mode, calls: turn.toolCalls.map((c) => [c.name, c.args]), text: turn.text, finish: turn.finishReason }).toEqual({
        mode,
        calls: [['fs_write', write.args]],
        text: '\nThis writes the summary {as asked}.',
        finish: 'tool-calls',
      });
      expect(heard.join('')).toBe('\nThis writes the summary {as asked}.');
    }
    // An object with braces inside its strings closes where JSON says it does.
    expect(objectEnd('{"a": "}{", "b": {"c": 1}} tail')).toBe('{"a": "}{", "b": {"c": 1}}'.length);
    expect(objectEnd('{"a": "\\"}" ')).toBe(-1);
  });

  test('a turn offered no tools (a decision, a summary) goes to the model as it is in every mode: no tools\' prompt telling how to call "none"', async () => {
    for (const mode of ['json', 'xml', 'qwen'] as const) {
      server.requests.splice(0);
      server.enqueue({ text: 'urgent' });
      const turn = await modelTurn({ model, system: 'Decide: urgent or routine.', messages: ask.messages }, local(mode));
      expect({ mode, text: turn.text, messages: server.requests[0].body.messages }).toEqual({
        mode,
        text: 'urgent',
        messages: [
          { role: 'system', content: 'Decide: urgent or routine.' },
          { role: 'user', content: 'summarise notes.txt into summary.txt' },
        ],
      });
    }
  });

  test('a text mode runs the first call of a turn only (a small model guesses what the others need); native runs them all', async () => {
    const read = { id: 'r', name: 'fs_read', args: { path: 'notes.txt' } };
    for (const [mode, style] of [['json', 'tool-call-tags'], ['xml', 'xml'], ['qwen', 'qwen']] as const) {
      server.enqueue({ text: 'Reading, then writing.', toolCalls: [read, write], toolCallsAs: style });
      const turn = await modelTurn(ask, local(mode));
      expect({ mode, calls: turn.toolCalls.map((c) => [c.name, c.args]) }).toEqual({ mode, calls: [['fs_read', read.args]] });
    }
    server.enqueue({ toolCalls: [read, write] });
    expect((await modelTurn(ask, local('native'))).toolCalls.map((c) => c.name)).toEqual(['fs_read', 'fs_write']);
  });

  test('each later turn sends the earlier calls and their results in the mode\'s own format', async () => {
    const conversation: ModelTurnRequest = {
      ...ask,
      messages: [
        { role: 'user', content: 'summarise notes.txt' },
        { role: 'assistant', toolCalls: [{ id: 'c1', name: 'fs_read', args: { path: 'notes.txt' } }] },
        { role: 'tool', toolCallId: 'c1', toolName: 'fs_read', result: 'NOTES-CONTENT-77' },
      ],
    };
    const sent: Record<string, { role: string; content: string }[]> = {};
    for (const mode of ['json', 'xml', 'qwen'] as const) {
      server.requests.splice(0);
      server.enqueue({ text: 'done' });
      await modelTurn(conversation, local(mode));
      sent[mode] = server.requests[0].body.messages as { role: string; content: string }[];
    }
    expect(sent.json.slice(1).map((m) => [m.role, m.content])).toEqual([
      ['user', 'summarise notes.txt'],
      ['assistant', '<tool_call>{"name":"fs_read","arguments":{"path":"notes.txt"}}</tool_call>'],
      ['user', '<tool_response>{"name":"fs_read","content":"NOTES-CONTENT-77"}</tool_response>'],
    ]);
    expect(sent.xml[2].content).toContain('<fs_read>');
    expect(sent.xml[3].content).toContain('NOTES-CONTENT-77');
    expect(sent.qwen[2].content).toContain('<function="fs_read">');
    expect(sent.qwen[3].content).toContain('NOTES-CONTENT-77');
  });

  test('a call in a style the mode does not read is flagged with the fix for the endpoint, never taken for an answer', async () => {
    const cases: [ToolCallMode | undefined, TextToolCallStyle, string][] = [
      [undefined, 'json-block', 'set toolCalls: json for the endpoint (models.compatible.local.toolCalls in cadre.config.yaml; it is native now)'],
      ['native', 'xml', 'set toolCalls: xml for the endpoint (models.compatible.local.toolCalls in cadre.config.yaml; it is native now)'],
      ['json', 'qwen', 'set toolCalls: qwen for the endpoint (models.compatible.local.toolCalls in cadre.config.yaml; it is json now)'],
      ['xml', 'tool-call-tags', 'set toolCalls: json for the endpoint (models.compatible.local.toolCalls in cadre.config.yaml; it is xml now)'],
    ];
    for (const [mode, style, fix] of cases) {
      server.enqueue({ toolCalls: [write], toolCallsAs: style });
      const turn = await modelTurn(ask, local(mode));
      expect({ mode, style, calls: turn.toolCalls, flag: turn.unparsedToolCall }).toEqual({ mode, style, calls: [], flag: { tool: 'fs_write', style: expect.any(String), fix } });
    }
    // A provider with no toolCalls setting: the fix is to serve the model as an endpoint that has one.
    server.enqueue({ toolCalls: [write], toolCallsAs: 'json-block' });
    expect((await modelTurn({ ...ask, model: 'openai:qwen2.5-coder' }, settings)).unparsedToolCall?.fix).toBe('serve the model as an endpoint under models.compatible in cadre.config.yaml, with toolCalls: json');
  });

  test('markup that does not parse stays in the text (the library would drop it) and is flagged', async () => {
    server.enqueue({ text: 'Here:\n<tool_call>\n{"name": "fs_write", "arguments": {"path": "a.txt", "content": }\n</tool_call>', chunks: undefined });
    const turn = await modelTurn(ask, local('json'));
    expect(turn.toolCalls).toEqual([]);
    expect(turn.text).toContain('<tool_call>');
    expect(turn.unparsedToolCall).toMatchObject({ tool: 'fs_write', style: 'json' });
  });

  test('an answer that matches the output schema is the output, whatever it looks like; one that does not is flagged rather than failed', async () => {
    const callSchema = { type: 'object', properties: { name: { type: 'string' }, arguments: { type: 'object' } }, required: ['name', 'arguments'] };
    server.enqueue({ text: '{"name": "fs_read", "arguments": {"path": "x"}}' }, { text: '```json\n{"name": "fs_read", "arguments": {"path": "x"}}\n```' });
    const matching = await modelTurn({ ...ask, outputSchema: callSchema }, local());
    expect(matching.output).toEqual({ name: 'fs_read', arguments: { path: 'x' } });
    expect(matching.unparsedToolCall).toBeUndefined();
    const fenced = await modelTurn({ ...ask, outputSchema: verdict }, local());
    expect(fenced.output).toBeUndefined();
    expect(fenced.unparsedToolCall?.tool).toBe('fs_read');
  });

  test('plain answers and native calls are untouched by the guard', async () => {
    server.enqueue({ text: 'I wrote summary.txt: it has two lines.' }, { toolCalls: [write] });
    expect((await modelTurn(ask, local('xml'))).unparsedToolCall).toBeUndefined();
    expect((await modelTurn(ask, local())).toolCalls).toEqual([{ id: 'w', name: 'fs_write', args: write.args }]);
  });

  test('the activity checks and redacts calls read from text like any other', async () => {
    const { modelTurn: activity } = createActivities({ models: local('xml', { LOCAL_KEY: KEY }) });
    server.enqueue({ toolCalls: [{ id: 'a', name: 'fs_write', args: { path: 'leak.txt', content: `the key is ${KEY}` } }, { id: 'b', name: 'rm_rf', args: { path: '/' } }], toolCallsAs: 'xml' });
    const turn = (await new MockActivityEnvironment().run(activity, { ...ask, model })) as ModelTurnResult;
    // The tool the model made up is not read as a call (the parser knows only the offered tools) and stays in the text.
    expect(turn.toolCalls).toEqual([{ id: expect.any(String), name: 'fs_write', args: { path: 'leak.txt', content: 'the key is [redacted]' } }]);
    expect(JSON.stringify(turn)).not.toContain(KEY);
    expect(server.requests.at(-1)?.headers.authorization).toBe(`Bearer ${KEY}`);
  });

  test('toolCalls is required by default on this machine and native elsewhere, one of five modes, and can be replaced per endpoint', () => {
    const parsed = parseModelsSection(
      `models:\n  compatible:\n    local: { baseURL: "${server.baseURL}" }\n    small: { baseURL: "${server.baseURL}", toolCalls: xml }\n    hosted: { baseURL: "https://api.example.com/v1" }\n    lan: { baseURL: "http://192.168.1.20:8080/v1" }\n    named: { baseURL: "http://localhost:11434/v1" }\n    six: { baseURL: "http://[::1]:8000/v1" }\n`,
    );
    const all = modelSettings(parsed, {});
    expect(Object.fromEntries(Object.entries(all.compatible).map(([name, e]) => [name, e.toolCalls]))).toEqual({ local: 'required', small: 'xml', hosted: 'native', lan: 'native', named: 'required', six: 'required' });
    expect(withToolCalls(all, 'local', 'qwen').compatible.local.toolCalls).toBe('qwen');
    expect(all.compatible.local.toolCalls).toBe('required');
    expect(() => withToolCalls(all, 'nope', 'json')).toThrow('no endpoint "nope"');
    expect(() => parseModelsSection('models:\n  compatible:\n    local: { baseURL: "http://x", toolCalls: hermes }\n')).toThrow(/models\.compatible\.local\.toolCalls: .*"required"\|"native"\|"json"\|"xml"\|"qwen"/);
  });
});

describe('toolCalls: required: every reply a call, and finish answers', () => {
  const settings = (extra: Record<string, unknown> = {}) => modelSettings({ compatible: { local: { baseURL: server.baseURL, model: 'small', toolCalls: 'required', ...extra } } }, {});
  const model = 'openai-compatible:local';
  const readTool = { name: 'fs_read', description: 'Read a file', inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } };
  const ask: ModelTurnRequest = { model, messages: [{ role: 'user', content: 'what does notes.txt say?' }], tools: [readTool] };
  const finishOf = (i: number) => (server.requests[i].body.tools as { function: { name: string; parameters: unknown } }[]).find((t) => t.function.name === 'finish')?.function.parameters;
  afterEach(() => {
    server.ignoreToolChoice = false;
  });

  test('the request offers the tools and finish as real tools, requires a call, one a turn, greedy; a call comes back as the call', async () => {
    server.enqueue({ toolCalls: [{ id: 'r', name: 'fs_read', args: { path: 'notes.txt' } }] });
    const turn = await modelTurn(ask, settings());
    expect(turn.toolCalls).toEqual([{ id: 'r', name: 'fs_read', args: { path: 'notes.txt' } }]);
    const { body } = server.requests[0];
    expect(body).toMatchObject({ tool_choice: 'required', parallel_tool_calls: false, temperature: 0, stream: true });
    expect((body.tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual(['fs_read', 'finish']);
    // No tools' prompt: the server sees the tools, and its grammar makes the call; the system prompt says how a turn works.
    const messages = body.messages as { role: string; content: string }[];
    expect(messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(messages[0].content).toMatch(/^You work through tools: every reply of yours is one tool call\..* When the task is done, call finish with your answer\.$/);
  });

  test('finish ends the turn with its answer: text, or the output schema\'s value checked; a finish that does not match goes back to the model', async () => {
    // A finish before any tool was called is sent back once: the model has likely done nothing.
    server.enqueue({ text: 'notes.txt says: ship on Friday' });
    expect((await modelTurn(ask, settings())).toolCalls).toEqual([{ id: expect.any(String), name: 'finish', args: { answer: 'notes.txt says: ship on Friday' }, error: expect.stringMatching(/^not finished: you have not called any tool yet/) }]);
    server.requests.splice(0);
    const acted: ModelTurnRequest = {
      ...ask,
      messages: [...ask.messages, { role: 'assistant', toolCalls: [{ id: 'r', name: 'fs_read', args: { path: 'notes.txt' } }] }, { role: 'tool', toolCallId: 'r', toolName: 'fs_read', result: 'ship on Friday' }],
    };
    server.enqueue({ text: 'notes.txt says: ship on Friday' });
    const heard: string[] = [];
    expect(await modelTurn(acted, settings(), undefined, { textDelta: (t) => heard.push(t) })).toEqual({ text: 'notes.txt says: ship on Friday', toolCalls: [], finishReason: 'stop', usage: { inputTokens: 0, outputTokens: 0 } });
    expect(heard).toEqual(['notes.txt says: ship on Friday']);
    expect(finishOf(0)).toEqual({ type: 'object', properties: { answer: { type: 'string', description: expect.any(String) } }, required: ['answer'], additionalProperties: false });
    const schema = { type: 'object', properties: { day: { type: 'string' }, count: { type: 'integer' } }, required: ['day', 'count'], additionalProperties: false };
    server.enqueue({ text: '{"day": "Friday", "count": 2}' });
    const structured = await modelTurn({ ...acted, outputSchema: schema }, settings());
    expect(structured).toMatchObject({ output: { day: 'Friday', count: 2 }, toolCalls: [] });
    expect(finishOf(1)).toEqual(schema);
    // The response format is the calls', finish's holding the answer's shape: not the output schema alone.
    expect((server.requests[1].body.response_format as { json_schema: { name: string } }).json_schema.name).toBe('tool_call');
    const list = { type: 'array', items: { type: 'string' } };
    server.enqueue({ text: '["a.txt", "b.txt"]' });
    expect((await modelTurn({ ...acted, outputSchema: list }, settings())).output).toEqual(['a.txt', 'b.txt']);
    server.enqueue({ text: '{"day": "Friday", "count": "two"}' });
    const wrong = await modelTurn({ ...acted, outputSchema: schema }, settings());
    expect(wrong.output).toBeUndefined();
    expect(wrong.toolCalls).toEqual([{ id: expect.any(String), name: 'finish', args: { day: 'Friday', count: 'two' }, error: expect.stringMatching(/^the arguments do not match finish's schema: count: /) }]);
  });

  test('a server that ignores "required" but holds the reply to response_format\'s schema (llama.cpp) sends the call as text, read as the call', async () => {
    server.ignoreToolChoice = true;
    server.enqueue({ toolCalls: [{ id: 'r', name: 'fs_read', args: { path: 'notes.txt' } }], toolCallsAs: 'bare-json' }, { toolCalls: [{ id: 'f', name: 'finish', args: { answer: 'ship on Friday' } }], toolCallsAs: 'bare-json' });
    expect((await modelTurn(ask, settings())).toolCalls).toEqual([{ id: expect.any(String), name: 'fs_read', args: { path: 'notes.txt' } }]);
    expect((await modelTurn(ask, settings())).toolCalls[0]).toMatchObject({ name: 'finish', args: { answer: 'ship on Friday' }, error: expect.stringContaining('not finished') });
    const format = server.requests[0].body.response_format as { type: string; json_schema: { schema: { oneOf: { properties: { name: unknown; arguments: unknown } }[] } } };
    expect(format.type).toBe('json_schema');
    expect(format.json_schema.schema.oneOf.map((call) => call.properties.name)).toEqual([{ const: 'fs_read' }, { const: 'finish' }]);
    expect(format.json_schema.schema.oneOf[0].properties.arguments).toEqual(readTool.inputSchema);
    // The schema asks for a thought first: it becomes the turn's text, said before the call.
    expect(format.json_schema.schema.oneOf[0]).toMatchObject({ required: ['thought', 'name', 'arguments'], properties: { thought: { type: 'string', maxLength: 400 } } });
    server.enqueue({ text: JSON.stringify({ thought: 'The notes are in notes.txt: read them first.', name: 'fs_read', arguments: { path: 'notes.txt' } }) });
    const heard: string[] = [];
    expect(await modelTurn(ask, settings(), undefined, { textDelta: (t) => heard.push(t) })).toMatchObject({
      text: 'The notes are in notes.txt: read them first.',
      toolCalls: [{ name: 'fs_read', args: { path: 'notes.txt' } }],
    });
    expect(heard.join('')).toBe('The notes are in notes.txt: read them first.');
  });

  test('greedy, a model says the same again: the turn after a call sent back, and a reply cut before its call ended, are sampled', async () => {
    server.ignoreToolChoice = true;
    const call = (thought: string) => JSON.stringify({ thought, name: 'fs_read', arguments: { path: 'notes.txt' } });
    const refused: ModelTurnRequest = {
      ...ask,
      messages: [
        ...ask.messages,
        { role: 'assistant', toolCalls: [{ id: 'f', name: 'finish', args: { answer: 'done' }, error: 'not finished: you have not called any tool yet' }] },
        { role: 'tool', toolCallId: 'f', toolName: 'finish', result: 'not finished: you have not called any tool yet', isError: true },
      ],
    };
    server.enqueue({ text: call('read first') }, { text: call('read') });
    await modelTurn(refused, settings());
    await modelTurn(ask, settings());
    expect(server.requests.map((r) => r.body.temperature)).toEqual([0.7, 0]);
    // Cut at max_tokens (whitespace the grammar allows, without end): asked again once, sampled; both replies' tokens count.
    server.requests.splice(0);
    server.enqueue({ text: `{\n  "thought": "The file${' '.repeat(40)}`, finishReason: 'length', usage: { inputTokens: 100, outputTokens: 64 } }, { text: call('again'), usage: { inputTokens: 100, outputTokens: 20 } });
    expect(await modelTurn(ask, settings())).toMatchObject({ text: 'again', toolCalls: [{ name: 'fs_read' }], usage: { inputTokens: 200, outputTokens: 84 } });
    expect(server.requests.map((r) => r.body.temperature)).toEqual([0, 0.7]);
    // Cut twice: the step fails ModelOutputCut, saying what the model wrote; an endpoint that sets its own temperature is not asked again.
    const cut = { text: '{"thought": "The', finishReason: 'length' as const };
    server.enqueue(cut, cut);
    await expect(modelTurn(ask, settings())).rejects.toMatchObject({ type: ErrorTypes.ModelOutputCut, nonRetryable: true, message: expect.stringContaining('It said: "{\\"thought\\": \\"The"') });
    server.requests.splice(0);
    server.enqueue(cut);
    await expect(modelTurn(ask, settings({ temperature: 0.2 }))).rejects.toMatchObject({ type: ErrorTypes.ModelOutputCut });
    expect(server.requests).toHaveLength(1);
  });

  test('a server that ignores "required" is detected and named, never taken for an answer; a tool of the step named finish is refused', async () => {
    server.ignoreToolChoice = true;
    server.enqueue({ text: 'I would call fs_read on notes.txt.' });
    const failure = (await modelTurn(ask, settings()).catch((err: unknown) => err)) as ApplicationFailure;
    expect(failure.type).toBe(ErrorTypes.ToolChoiceIgnored);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain(`the server at ${server.baseURL} answered in words instead: it ignores tool_choice "required"`);
    expect(failure.message).toContain('It said: "I would call fs_read on notes.txt."');
    const named = { ...ask, tools: [{ ...readTool, name: 'finish' }] };
    await expect(modelTurn(named, settings())).rejects.toThrow('a tool named finish cannot be offered with toolCalls: required');
  });

  test('an endpoint\'s sampling goes with its requests; a request\'s own maxOutputTokens wins', async () => {
    const tuned = settings({ temperature: 0.3, topP: 0.9, topK: 20, maxOutputTokens: 700 });
    server.enqueue({ text: 'a' }, { text: 'b' });
    await modelTurn(ask, tuned);
    await modelTurn({ ...ask, maxOutputTokens: 64 }, tuned);
    expect(server.requests.map((r) => [r.body.temperature, r.body.top_p, r.body.top_k, r.body.max_tokens])).toEqual([
      [0.3, 0.9, 20, 700],
      [0.3, 0.9, 20, 64],
    ]);
    expect(() => parseModelsSection('models:\n  compatible:\n    local: { baseURL: "http://x", temperature: 3, topK: 0 }\n')).toThrow(/models\.compatible\.local\.temperature: .*; models\.compatible\.local\.topK: /);
  });
});

describe('cadre models test: which toolCalls mode reads a model\'s calls', () => {
  // Set to native as an endpoint elsewhere would be (one on this machine is required unless it says): the advice is from there.
  const endpoint = (extra = ', toolCalls: native') => modelSettings(parseModelsSection(`models:\n  compatible:\n    local: { baseURL: "${server.baseURL}", model: small${extra} }\n`), {});
  const readNotes = { id: 'n', name: 'fs_read', args: { path: 'notes.txt' } };
  /** A model that answers every request the same way, whatever it was told. */
  const answersAlways = (style?: TextToolCallStyle) => server.enqueue(...Array.from({ length: 5 }, () => ({ toolCalls: [readNotes], ...(style && { toolCallsAs: style }) })));
  const modes = ['required', 'native', 'json', 'xml', 'qwen'];
  afterEach(() => {
    server.ignoreToolChoice = false;
  });

  test('a server that honours tool_choice "required" gets it recommended, whatever the model writes unconstrained', async () => {
    for (const style of [undefined, 'xml', 'bare-json'] as const) {
      answersAlways(style);
      const report = await tryToolCallModes('openai-compatible:local', endpoint());
      expect({ style, recommended: report.recommended, first: report.trials[0] }).toEqual({
        style,
        recommended: 'required',
        first: { mode: 'required', outcome: 'works', detail: 'called fs_read {"path":"notes.txt"}', ms: expect.any(Number) },
      });
      expect(report.advice).toBe('add this line under models.compatible.local in cadre.config.yaml:\n    toolCalls: required');
      server.clearQueue();
    }
  });

  test('on a server that ignores "required", each style of the fake server names the mode that reads it; the server is named', async () => {
    server.ignoreToolChoice = true;
    // A bare call is what a server that holds the reply to response_format's schema sends: required reads it.
    const expected: Record<TextToolCallStyle | 'native', string> = { native: 'required', 'json-block': 'json', 'tool-call-tags': 'json', 'bare-json': 'required', xml: 'xml', qwen: 'qwen' };
    for (const style of ['native', ...TEXT_TOOL_CALL_STYLES] as const) {
      answersAlways(style === 'native' ? undefined : style);
      const report = await tryToolCallModes('openai-compatible:local', endpoint());
      const works = report.trials.filter((t) => t.outcome === 'works').map((t) => t.mode);
      expect({ style, recommended: report.recommended, first: works[0] }).toEqual({ style, recommended: expected[style], first: expected[style] });
      expect(report.trials.map((t) => t.mode)).toEqual(modes);
      // A model that calls the tool anyway works on such a server too; one that writes its call as text shows the server ignores "required".
      if (expected[style] !== 'required') expect(report.trials[0].detail).toMatch(/^the server ignores tool_choice "required": it answered in words: "/);
    }
    expect(server.requests).toHaveLength(30);
    // Each mode sent its own request: required and native with the tools as tools (required with finish), the others in the system prompt.
    expect(server.requests.slice(0, 5).map((r) => (r.body.tools as { function: { name: string } }[] | undefined)?.map((t) => t.function.name))).toEqual([
      ['fs_read', 'finish'],
      ['fs_read'],
      undefined,
      undefined,
      undefined,
    ]);
    expect(server.requests.slice(0, 5).map((r) => r.body.tool_choice)).toEqual(['required', 'auto', undefined, undefined, undefined]);
  });

  test('the advice names the line to add, or says nothing needs changing', async () => {
    server.ignoreToolChoice = true;
    answersAlways('qwen');
    expect((await tryToolCallModes('openai-compatible:local', endpoint())).advice).toBe('add this line under models.compatible.local in cadre.config.yaml:\n    toolCalls: qwen');
    answersAlways('qwen');
    expect((await tryToolCallModes('openai-compatible:local', endpoint(', toolCalls: qwen'))).advice).toBe('toolCalls: qwen is set already: nothing to change');
    server.enqueue(...Array.from({ length: 5 }, () => ({ text: 'I cannot read files, but notes are usually short.' })));
    const none = await tryToolCallModes('openai-compatible:local', endpoint());
    expect(none.recommended).toBeUndefined();
    const words = 'answered in words: "I cannot read files, but notes are usually short."';
    expect(none.trials.map((t) => t.detail)).toEqual([`the server ignores tool_choice "required": it ${words}`, ...Array(4).fill(words)]);
    expect(none.advice).toMatch(/^no mode read a tool call from this model/);
  });

  test('a mode that does not answer in time fails, and the others are still tried; a refused key stops at the first', async () => {
    server.enqueue({ hangMs: 5_000 }, { text: 'no' }, { toolCalls: [readNotes], toolCallsAs: 'tool-call-tags' }, { text: 'no' }, { text: 'no' });
    const slow = await tryToolCallModes('openai-compatible:local', endpoint(), { timeoutMs: 300 });
    expect(slow.trials.map((t) => [t.mode, t.outcome, t.detail])).toEqual([
      ['required', 'fails', 'no answer within 0.3 s'],
      ['native', 'fails', 'answered in words: "no"'],
      ['json', 'works', 'called fs_read {"path":"notes.txt"}'],
      ['xml', 'fails', 'answered in words: "no"'],
      ['qwen', 'fails', 'answered in words: "no"'],
    ]);
    server.enqueue({ status: 401, body: { error: { message: 'bad key' } } });
    const refused = await tryToolCallModes('openai-compatible:local', endpoint());
    expect(refused.trials.map((t) => t.outcome)).toEqual(['fails', 'skipped', 'skipped', 'skipped', 'skipped']);
    expect(refused.advice).toMatch(/^the model gave no answer, so no mode could be judged; fix this first: ModelAuthFailed: /);
    await expect(tryToolCallModes('openai-compatible:other', endpoint())).rejects.toThrow('no endpoint "other" under models.compatible');
  });

  test('the command prints a line per mode and the recommendation, or the report as JSON; it exits 1 when no mode works', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-models-test-'));
    writeFileSync(path.join(dir, 'cadre.config.yaml'), `models:\n  compatible:\n    local: { baseURL: "${server.baseURL}", model: small }\n`);
    const env = { ...process.env, CADRE_MODEL: 'openai-compatible:local', CADRE_CONFIG: '' };
    server.ignoreToolChoice = true;
    answersAlways('xml');
    const text = await runCadre(['models', 'test'], dir, env);
    expect(text.stdout.split('\n')).toEqual([
      expect.stringMatching(/^required {2}fails {4}the server ignores tool_choice "required": it answered in words: "<fs_read>/),
      expect.stringMatching(/^native {4}fails {4}wrote its call to fs_read as text \(xml style\), which this mode does not read \(\d+\.\d s\)$/),
      expect.stringMatching(/^json {6}fails {4}wrote its call/),
      expect.stringMatching(/^xml {7}works {4}called fs_read \{"path":"notes.txt"\} \(\d+\.\d s\)$/),
      expect.stringMatching(/^qwen {6}fails {4}wrote its call/),
      'recommended: xml; add this line under models.compatible.local in cadre.config.yaml:',
      '    toolCalls: xml',
      '',
    ]);
    expect(text.code).toBe(0);
    server.enqueue(...Array.from({ length: 5 }, () => ({ text: 'no tools here' })));
    const json = await runCadre(['models', 'test', 'openai-compatible:local', '--json', '--timeout', '30s'], dir, env);
    expect(json.code).toBe(1);
    // An endpoint on this machine that names no mode is required's.
    expect(JSON.parse(json.stdout)).toMatchObject({ model: 'openai-compatible:local', endpoint: { name: 'local', toolCalls: 'required' }, trials: [{ mode: 'required', outcome: 'fails' }, { mode: 'native' }, {}, {}, {}] });
    expect(JSON.parse(json.stdout).recommended).toBeUndefined();
  });
});
