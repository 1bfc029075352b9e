/**
 * A model answer too big for Temporal's messages (gRPC's 4 MiB, a payload's 2 MB): it goes to the
 * run's blob store and travels by reference, the turn succeeds on its first attempt (paid for
 * once), the stream shows its beginning and says how long it was; with nowhere to store it, the
 * turn fails at once, for good, naming the limit and the size.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { keepTurnSmall } from '../src/activities/model-results';
import { modelSettings } from '../src/providers/config';
import type { StreamEventAt } from '../src/streaming/events';
import { type FakeModelServer, startFakeModelServer } from './support/fake-model-server';
import { compile, startPlan, tempWorkspace, withWorker } from './support/harness';

let server: FakeModelServer;
beforeAll(async () => {
  server = await startFakeModelServer();
});
afterAll(() => server.close());

const TEN_MB = 10 * 1024 * 1024;

test('a 10 MB answer is stored and passed by reference: one request, the run completes, its history stays small', async () => {
  const ws = tempWorkspace();
  const plan = compile(`name: big-answer\nsteps:\n  - { id: big, agent: { prompt: "write a lot", model: "openai:gpt-4o-mini" } }\n`, ws);
  const piece = 'x'.repeat(64 * 1024);
  server.enqueue({ chunks: Array.from({ length: TEN_MB / piece.length }, () => piece) });
  const models = modelSettings({}, { OPENAI_API_KEY: 'sk-test-big', OPENAI_BASE_URL: server.baseURL });
  await withWorker(
    async (h) => {
      const id = await startPlan(h, plan);
      const events: StreamEventAt[] = [];
      for await (const e of h.client.events(id)) events.push(e);
      const d = await h.client.result(id);
      expect(d.status).toBe('completed');
      // Paid for once: no retry, no second request.
      expect(server.requests).toHaveLength(1);
      expect(d.steps[0].attempts).toBe(1);
      // The answer is in the run's blob store, whole.
      const blobs = readdirSync(path.join(ws, '.cadre', 'blobs')).map((f) => statSync(path.join(ws, '.cadre', 'blobs', f)).size);
      expect(Math.max(...blobs)).toBeGreaterThanOrEqual(TEN_MB);
      const history = await h.client.client.workflow.getHandle(`${id}/big`).fetchHistory();
      expect(JSON.stringify(history).length).toBeLessThan(2 * 1024 * 1024);
      // The stream showed its beginning and says how much more there was.
      expect(events.find((e) => e.type === 'message_complete')).toMatchObject({ textChars: TEN_MB, streamedChars: 256 * 1024 });
      const streamed = events.filter((e) => e.type === 'text_delta').reduce((n, e) => n + (e as { text: string }).text.length, 0);
      expect(streamed).toBe(256 * 1024);
    },
    { activityDeps: { models } },
  );
});

test('with no store for it, a turn too big for a payload fails at once and for good, naming the limit and the size', async () => {
  const turn = { text: 'y'.repeat(3 * 1024 * 1024), toolCalls: [], finishReason: 'stop', usage: { inputTokens: 1, outputTokens: 1 } };
  const failure = await keepTurnSmall(turn, undefined, 'openai:gpt-4o-mini').then(
    () => undefined,
    (err: { type?: string; nonRetryable?: boolean; message: string }) => err,
  );
  expect(failure).toMatchObject({ type: 'TooLarge', nonRetryable: true });
  expect(failure?.message).toMatch(/the answer is 31458\d\d bytes, over the 2031616 a turn may bring back/);
  // Small turns pass as they are, with or without a store.
  const small = { ...turn, text: 'short' };
  expect(await keepTurnSmall(small, undefined, 'm')).toBe(small);
});
