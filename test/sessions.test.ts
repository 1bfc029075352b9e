/**
 * Sessions on the dev server: messages by Update-with-Start, replies as update results, the last
 * messages in context with older ones summarised, continue-as-new, tools, and the CLI's send.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { modelSettings } from '../src/providers/config';
import { endSession, sendMessage, sessionDiagnostics, sessionInput } from '../src/client/sessions';
import { type FakeModelServer, type RecordedRequest, startFakeModelServer } from './support/fake-model-server';
import { exited, runCadre, spawnCadre, testServerEnv } from './support/cli';
import { type Harness, tempWorkspace, uniqueId, withWorker } from './support/harness';
import { patchMarkers } from './support/history';
import { followByPolls } from './support/poll-follower';
import { within } from './support/until';

interface ChatMessage {
  role: string;
  content?: unknown;
}

const messagesOf = (r: RecordedRequest) => r.body.messages as ChatMessage[];
const textOf = (m: ChatMessage) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content ?? ''));
const isSummary = (r: RecordedRequest) => textOf(messagesOf(r)[0]).startsWith('You keep the memory');

let server: FakeModelServer;
let summaries = 0;

beforeAll(async () => {
  // A model that answers every message by name, and summaries by number.
  server = await startFakeModelServer({
    respond: (body) => {
      const messages = body.messages as ChatMessage[];
      if (textOf(messages[0]).startsWith('You keep the memory')) return { text: `summary ${++summaries}`, usage: { inputTokens: 50, outputTokens: 5 } };
      const last = [...messages].reverse().find((m) => m.role === 'user');
      return { text: `reply to ${textOf(last ?? { role: 'user' })}`, usage: { inputTokens: messages.length, outputTokens: 3 } };
    },
  });
});
afterAll(() => server.close());

function withModels<T>(fn: (h: Harness) => Promise<T>): Promise<T> {
  const models = modelSettings({}, { OPENAI_API_KEY: 'sk-test-sessions', OPENAI_BASE_URL: server.baseURL });
  return withWorker(fn, { activityDeps: { models } });
}

const MESSAGES = 150;

test('150 messages: replies in order, the last 50 messages in context, older ones summarised, continue-as-new carries it all', async () => {
  server.requests.splice(0);
  const ws = tempWorkspace();
  const id = uniqueId('session');
  // Continued as new every 50 messages (100 by default): three runs at least.
  const start = sessionInput({ model: 'openai:gpt-4o-mini', system: 'Be brief.', workspace: ws, continueEvery: 50 });
  await withModels(async (h) => {
    const runs = new Set<number>();
    let firstRunId: string | undefined;
    for (let i = 1; i <= MESSAGES; i++) {
      const result = await sendMessage(h.client, id, `m-${i}`, start, { taskQueue: h.taskQueue });
      firstRunId ??= (await h.client.client.workflow.getHandle(id).describe()).runId;
      expect(result.reply).toBe(`reply to m-${i}`);
      expect(result.message).toBe(i);
      runs.add(result.run);
    }
    const d = await sessionDiagnostics(h.client, id);
    expect(d.answered).toBe(MESSAGES);
    expect(d.inContext).toBeGreaterThanOrEqual(50);
    // keep + one fold batch, and the exchange that crossed it while its summary is made.
    expect(d.inContext).toBeLessThanOrEqual(72);
    expect(d.summarised + d.inContext).toBe(2 * MESSAGES);
    expect(d.dropped).toBe(0);
    // Continued as new at least once: later replies came from later runs, with one history each.
    expect(runs.size).toBeGreaterThanOrEqual(3);
    expect((await h.client.client.workflow.getHandle(id).describe()).runId).not.toBe(firstRunId);
    // Each run records one patch marker, its baseline's (protocol/patches.ts), where it took five.
    expect(await patchMarkers(h.client.client, id, firstRunId)).toEqual(['session-baseline']);
    expect(await patchMarkers(h.client.client, id)).toEqual(['session-baseline']);

    const answers = server.requests.filter((r) => !isSummary(r));
    expect(answers).toHaveLength(MESSAGES);
    const last = messagesOf(answers[MESSAGES - 1]);
    const users = last.filter((m) => m.role === 'user').map(textOf);
    // The last 50 messages at least (25 exchanges), in order, and nothing older than what was folded.
    expect(users.slice(-25)).toEqual(Array.from({ length: 25 }, (_, k) => `m-${MESSAGES - 24 + k}`));
    expect(users).not.toContain('m-1');
    expect(textOf(last[0])).toMatch(/^Be brief\.\n\nSummary of the earlier conversation \(\d+ messages\): summary \d+$/);
    // The summariser saw the folded messages and the summary before it.
    const secondSummary = server.requests.filter(isSummary)[1];
    expect(textOf(messagesOf(secondSummary)[1])).toContain('Earlier summary: summary 1');
    await endSession(h.client, id);
    const ended = await h.client.client.workflow.getHandle(id).result();
    expect(ended.answered).toBe(MESSAGES);
  });
});

test('a session agent calls tools; big outputs stay out of history; a message that is too long is refused whole', async () => {
  const ws = tempWorkspace();
  writeFileSync(path.join(ws, 'big.txt'), 'x'.repeat(100_000));
  const id = uniqueId('session-tools');
  let calls = 0;
  const start = sessionInput({ model: 'openai:gpt-4o-mini', tools: ['fs.read'], workspace: ws });
  await withModels(async (h) => {
    server.enqueue({ toolCalls: [{ id: `r${++calls}`, name: 'fs_read', args: { path: 'big.txt' } }] }, { text: 'it is big' });
    const reply = await sendMessage(h.client, id, 'how big is big.txt?', start, { taskQueue: h.taskQueue });
    expect(reply.reply).toBe('it is big');
    // The model got the file's text (clipped for it), read back from the blob store by the activity.
    const toolMessage = messagesOf(server.requests.at(-1) as RecordedRequest).find((m) => m.role === 'tool') as ChatMessage;
    expect(textOf(toolMessage)).toContain('xxxxxxxx');
    const history = await h.client.client.workflow.getHandle(id).fetchHistory();
    const bytes = JSON.stringify(history).length;
    expect(bytes).toBeLessThan(100_000);
    await expect(sendMessage(h.client, id, 'y'.repeat(40_000), start, { taskQueue: h.taskQueue })).rejects.toThrow('the message has 40000 characters; at most 32768');
    const d = await sessionDiagnostics(h.client, id);
    expect([d.answered, d.toolCalls]).toEqual([1, 1]);
  });
});

test('cadre send starts a session and adds to it', async () => {
  const ws = tempWorkspace();
  const id = uniqueId('cli-session');
  await withModels(async (h) => {
    const env = { ...testServerEnv(), CADRE_TASK_QUEUE: h.taskQueue, CADRE_MODEL: 'openai:gpt-4o-mini' };
    const first = await runCadre(['send', id, 'hello there'], ws, env);
    expect(first).toMatchObject({ code: 0, stdout: 'reply to hello there\n' });
    const json = await runCadre(['send', id, 'and again', '--json'], ws, env);
    expect(JSON.parse(json.stdout)).toMatchObject({ reply: 'reply to and again', message: 2 });
    const bad = await runCadre(['send', id, 'x', '--tools', 'rm'], ws, env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('unknown tool "rm"');
  });
});

test('cadre chat: lines are messages, /status shows the session, /end ends it', async () => {
  const ws = tempWorkspace();
  const id = uniqueId('chat');
  await withModels(async (h) => {
    const env = { ...testServerEnv(), CADRE_TASK_QUEUE: h.taskQueue, CADRE_MODEL: 'openai:gpt-4o-mini' };
    const child = spawnCadre(['chat', id], ws, env);
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const until = async (test: () => boolean) => {
      for (const deadline = Date.now() + 30_000; !test(); ) {
        if (Date.now() > deadline) throw new Error(`chat said: ${stdout} / ${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    child.stdin?.write('first question\n');
    await until(() => stdout.includes('reply to first question\n'));
    child.stdin?.write('/status\n');
    await until(() => stdout.includes('1 answered, 2 in context'));
    child.stdin?.write('/end\n');
    expect(await exited(child)).toBe(0);
    expect(stderr).toContain(`ended ${id}`);
    const ended = await h.client.client.workflow.getHandle(id).result();
    expect(ended.answered).toBe(1);
  });
});

test("a stock Workflow Streams reader follows a session across continue-as-new to the end of its last run", async () => {
  const id = uniqueId('session-followed');
  // Continued as new every two messages: the last run is short, and can end before the reader, a run behind, has reached it.
  const ws = tempWorkspace();
  writeFileSync(path.join(ws, 'chat.yaml'), 'cycle: true\nturns:\n  - reply: { text: "noted" }\n');
  const start = sessionInput({ model: `scripted:${path.join(ws, 'chat.yaml')}`, workspace: ws, continueEvery: 2 });
  await withWorker(async (h) => {
    await sendMessage(h.client, id, 'm-1', start, { taskQueue: h.taskQueue });
    const following = followByPolls(h.client.client, id, 'run_completed');
    for (let i = 2; i <= 5; i++) await sendMessage(h.client, id, `m-${i}`, start, { taskQueue: h.taskQueue });
    await endSession(h.client, id);
    await h.client.client.workflow.getHandle(id).result();
    // It read the session's last event, in the run that ended (which waited for it, as a run polled itself does).
    expect(await within('the reader at the last run\'s end', following, 30_000)).toBeGreaterThan(5);
  });
});
