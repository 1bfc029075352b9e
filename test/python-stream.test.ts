/**
 * A run's stream from Python with nothing of cadre installed: examples/clients/follow_run.py
 * subscribes with Temporal's Python SDK (`temporalio.contrib.workflow_streams`) to the run's stream
 * and its agent's, and sees the agent's text while the model is still sending it, every offset of
 * each stream once and in order, the run's end, and resumes from where it stopped with exactly what
 * it had not printed.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { modelSettings } from '../src/providers/config';
import { type FakeModelServer, startFakeModelServer } from './support/fake-model-server';
import { pythonWithTemporal } from './support/python';
import { type Harness, compile, startPlan, tempWorkspace, waitUntil, withWorker } from './support/harness';

const SCRIPT = path.join(__dirname, '..', 'examples', 'clients', 'follow_run.py');
let python: string;
let server: FakeModelServer;

beforeAll(async () => {
  python = await pythonWithTemporal((line) => process.stderr.write(`${line}\n`));
  server = await startFakeModelServer();
}, 360_000);
afterAll(() => server?.close());

interface Line {
  event: { type: string; offset: number; stream?: string; text?: string; status?: string } & Record<string, unknown>;
  /** Date.now() when the line reached us. */
  at: number;
}

interface Followed {
  code: number | null;
  lines: Line[];
  stderr: string;
}

/** Runs follow_run.py at once (not awaited here), reading its stdout line by line as it comes. */
function follow(workflowId: string, extra: string[] = [], limitMs = 25_000): Promise<Followed> {
  const env = { ...process.env, TEMPORAL_ADDRESS: process.env.CADRE_TEST_ADDRESS, TEMPORAL_NAMESPACE: process.env.CADRE_TEST_NAMESPACE ?? 'default' };
  const child = spawn(python, [SCRIPT, workflowId, '--json', ...extra], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Line[] = [];
  let stderr = '';
  createInterface({ input: child.stdout }).on('line', (line) => lines.push({ event: JSON.parse(line), at: Date.now() }));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    // 'close', not 'exit': every line of stdout has been read by then.
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, lines, stderr });
    });
  });
}

function withModels<T>(fn: (h: Harness) => Promise<T>): Promise<T> {
  const models = modelSettings({}, { OPENAI_API_KEY: 'sk-test-python-stream', OPENAI_BASE_URL: server.baseURL });
  return withWorker(fn, { activityDeps: { models } });
}

const PLAN = `name: followed-from-python
steps:
  - { id: write, agent: { prompt: "write a sentence", model: "openai:gpt-4o-mini" } }
  - { id: after, dependsOn: [write], echo: { text: "done" } }
`;
const words = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}${i} `);
const texts = (lines: Line[]) => lines.filter((l) => l.event.type === 'text_delta').map((l) => l.event.text).join('');

test('Python follows a run live: the text before the model has finished, every offset once, then the end', async () => {
  const chunks = words(20, 'py');
  server.enqueue({ chunks, chunkDelayMs: 100, usage: { inputTokens: 5, outputTokens: 20 } });
  await withModels(async (h) => {
    const id = await startPlan(h, compile(PLAN, tempWorkspace()));
    const { code, lines, stderr } = await follow(id);
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });

    expect(texts(lines)).toBe(chunks.join(''));
    // Printed before the model sent its last word: streamed, not read once the run was over.
    const lastSent = server.chunkTimes.filter((c) => chunks.includes(c.text)).at(-1)?.at as number;
    const firstPrinted = lines.find((l) => l.event.type === 'text_delta')?.at as number;
    expect(firstPrinted).toBeLessThan(lastSent);

    // The run's stream and its agent's, each offset once and in order; the agent's between its start and its step's end.
    const own = lines.filter((l) => l.event.stream === undefined).map((l) => l.event.offset);
    expect(own).toEqual(own.map((_, i) => i));
    const started = lines.findIndex((l) => l.event.type === 'agent_started');
    const agent = lines.filter((l) => l.event.stream !== undefined);
    expect(agent.every((l) => l.event.stream === lines[started].event.workflowId)).toBe(true);
    expect(agent.map((l) => l.event.offset)).toEqual(agent.map((_, i) => i));
    expect(lines.indexOf(agent[0])).toBeGreaterThan(started);
    expect(lines.indexOf(agent.at(-1) as Line)).toBeLessThan(lines.findIndex((l) => l.event.type === 'step_completed' && l.event.step === 'write'));
    expect(lines.map((l) => l.event.type)).toEqual(expect.arrayContaining(['step_started', 'message_start', 'message_complete', 'step_completed', 'agent_ended']));
    expect(lines.at(-1)?.event).toMatchObject({ type: 'run_completed', status: 'completed' });
  });
}, 60_000);

test('Python resumes from an offset after the run has ended: exactly the events from there', async () => {
  const chunks = words(8, 'again');
  server.enqueue({ chunks, chunkDelayMs: 20 });
  await withModels(async (h) => {
    const id = await startPlan(h, compile(PLAN, tempWorkspace()));
    const first = await follow(id);
    expect(first.code).toBe(0);
    expect(first.lines.at(-1)?.event).toMatchObject({ type: 'run_completed', status: 'completed' });

    // Resumed in the middle of the agent's text: the run's offset and the agent's, as the script prints them on Ctrl-C.
    const middle = first.lines.findIndex((l) => l.event.type === 'text_delta') + 2;
    const before = first.lines.slice(0, middle);
    const own = before.filter((l) => l.event.stream === undefined).at(-1)?.event.offset as number;
    const agentLine = before.filter((l) => l.event.stream !== undefined).at(-1) as Line;
    const resumed = await follow(id, ['--from', String(own + 1), '--from', `${agentLine.event.stream}=${agentLine.event.offset + 1}`]);
    expect({ code: resumed.code, stderr: resumed.stderr }).toEqual({ code: 0, stderr: '' });
    expect(resumed.lines.map((l) => l.event)).toEqual(first.lines.slice(middle).map((l) => l.event));
  });
}, 60_000);

test('a stock Python follower through ten minutes of streaming cannot use up the updates the answer at the end needs', async () => {
  // Batches every 5 ms and a follower that polls every 5 ms once caught up: thirty seconds here are ten minutes at the defaults (100 ms).
  const batchMs = process.env.CADRE_STREAM_BATCH_MS;
  process.env.CADRE_STREAM_BATCH_MS = '5';
  const ws = tempWorkspace();
  writeFileSync(path.join(ws, 'notes.txt'), 'the notes');
  const plan = `name: followed-for-long
steps:
  - { id: write, agent: { prompt: "write at length, then read notes.txt", model: "openai:gpt-4o-mini", tools: [fs.read], approvals: { fs.read: ask } } }
`;
  const chunks = words(3000, 'long');
  server.enqueue({ chunks, chunkDelayMs: 10, toolCalls: [{ id: 'r1', name: 'fs_read', args: { path: 'notes.txt' } }] }, { text: 'The notes say: the notes.' });
  try {
    await withModels(async (h) => {
      const id = await startPlan(h, compile(plan, ws));
      const following = follow(id, ['--poll-cooldown', '5'], 240_000);
      const waiting = await waitUntil(h, id, (d) => d.waiting.some((w) => w.kind === 'approval'), 200_000);
      // The person's answer: an update, accepted.
      await h.client.approve(id, waiting.waiting[0].id);
      expect((await h.client.result(id)).status).toBe('completed');
      const { code, lines, stderr } = await following;
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      // Every word, once, in order (compared whole, without printing 20 KB of it on failure).
      const text = texts(lines);
      expect({ length: text.length, same: text === `${chunks.join('')}The notes say: the notes.` }).toEqual({ length: chunks.join('').length + 25, same: true });
      const history = async (workflowId: string) => (await h.client.client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
      const updates = async (workflowId: string) => (await history(workflowId)).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
      // A workflow task the server refused drops the poll it carried (the follower asks again): say why, when one did.
      const failedTasks = async (workflowId: string) =>
        (await history(workflowId)).flatMap((e) => (e.workflowTaskFailedEventAttributes ? [`${e.workflowTaskFailedEventAttributes.cause}: ${e.workflowTaskFailedEventAttributes.failure?.message}`] : []));
      const agent = lines.find((l) => l.event.type === 'agent_started')?.event.workflowId as string;
      const [own, ofAgent] = [await updates(id), await updates(agent)];
      const failed = [...(await failedTasks(id)), ...(await failedTasks(agent))];
      console.log(`a follower through ${Math.round((server.chunkTimes.at(-1)!.at - server.chunkTimes[0].at) / 1000)} s of streaming: ${own} updates on the run, ${ofAgent} on its agent; workflow tasks failed: ${failed.length ? failed.join('; ') : 'none'}`);
      expect(own).toBeLessThan(1000);
      expect(ofAgent).toBeLessThan(1000);
    });
  } finally {
    if (batchMs === undefined) delete process.env.CADRE_STREAM_BATCH_MS;
    else process.env.CADRE_STREAM_BATCH_MS = batchMs;
  }
}, 300_000);

/**
 * Temporal's server drops a poll whose workflow task it refused (FAILED_PRECONDITION with a
 * WorkflowNotReadyFailure; seen under load in CI). The run goes on, so the follower asks again from
 * the offset it reached; any other error still ends it. follow_run.py's reading, with the stock
 * stream client replaced by one that fails as the server does.
 */
test('a poll dropped because its workflow task failed is asked again from where the follower was; other errors still end it', async () => {
  const probe = `
import asyncio, importlib.util, json, sys
from temporalio.api.common.v1 import GrpcStatus
from temporalio.api.errordetails.v1 import WorkflowNotReadyFailure
from temporalio.service import RPCError, RPCStatusCode
from google.protobuf.any_pb2 import Any

spec = importlib.util.spec_from_file_location("follow_run", sys.argv[1])
follow_run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(follow_run)

def not_ready():
    detail = Any()
    detail.Pack(WorkflowNotReadyFailure())
    status = GrpcStatus(code=RPCStatusCode.FAILED_PRECONDITION.value, message="Unable to perform workflow execution update due to unexpected workflow task failure.", details=[detail])
    return RPCError(status.message, RPCStatusCode.FAILED_PRECONDITION, status.SerializeToString())

class Item:
    def __init__(self, offset): self.offset, self.data = offset, {"type": "run_completed" if offset == 5 else "text_delta", "n": offset}

class FakeStream:
    """Serves offsets 0-5; fails as told after offsets 1 and 3."""
    def __init__(self, failure): self.failure, self.froms = failure, []
    async def subscribe(self, topics, from_offset, poll_cooldown):
        self.froms.append(from_offset)
        for offset in range(from_offset, 6):
            if offset in (2, 4) and len(self.froms) <= (1 if offset == 2 else 2):
                raise self.failure()
            yield Item(offset)

async def read(failure):
    fake = FakeStream(failure)
    follow_run.WorkflowStreamClient.create = staticmethod(lambda client, workflow_id: fake)
    got = []
    try:
        async for at, _ in follow_run.stream_events(None, "run", 0, lambda e: e["type"] == "run_completed", None):
            got.append(at)
        return {"offsets": got, "froms": fake.froms}
    except RPCError as err:
        return {"offsets": got, "froms": fake.froms, "error": err.status.name}

async def main():
    other = lambda: RPCError("the namespace is gone", RPCStatusCode.FAILED_PRECONDITION, b"")
    print(json.dumps({"notReady": await read(not_ready), "other": await read(other)}))
asyncio.run(main())
`;
  const ran = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(python, ['-c', probe, SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
  expect({ code: ran.code, stderr: ran.stderr }).toEqual({ code: 0, stderr: '' });
  expect(JSON.parse(ran.stdout)).toEqual({
    notReady: { offsets: [0, 1, 2, 3, 4, 5], froms: [0, 2, 4] },
    other: { offsets: [0, 1], froms: [0], error: 'FAILED_PRECONDITION' },
  });
}, 60_000);
