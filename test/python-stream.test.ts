/**
 * A run's stream from Python with nothing of cadre installed: examples/clients/follow_run.py
 * subscribes with Temporal's Python SDK (`temporalio.contrib.workflow_streams`) and sees an agent's
 * text while the model is still sending it, every offset once and in order, the run's end, and
 * resumes from an offset with exactly what it had not printed.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { modelSettings } from '../src/providers/config';
import { type FakeModelServer, startFakeModelServer } from './support/fake-model-server';
import { pythonWithTemporal } from './support/python';
import { type Harness, compile, startPlan, tempWorkspace, withWorker } from './support/harness';

const SCRIPT = path.join(__dirname, '..', 'examples', 'clients', 'follow_run.py');
let python: string;
let server: FakeModelServer;

beforeAll(async () => {
  python = await pythonWithTemporal((line) => process.stderr.write(`${line}\n`));
  server = await startFakeModelServer();
}, 360_000);
afterAll(() => server?.close());

interface Line {
  event: { type: string; offset: number; text?: string; status?: string } & Record<string, unknown>;
  /** Date.now() when the line reached us. */
  at: number;
}

interface Followed {
  code: number | null;
  lines: Line[];
  stderr: string;
}

/** Runs follow_run.py at once (not awaited here), reading its stdout line by line as it comes. */
function follow(workflowId: string, extra: string[] = []): Promise<Followed> {
  const env = { ...process.env, TEMPORAL_ADDRESS: process.env.CADRE_TEST_ADDRESS, TEMPORAL_NAMESPACE: process.env.CADRE_TEST_NAMESPACE ?? 'default' };
  const child = spawn(python, [SCRIPT, workflowId, '--json', ...extra], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Line[] = [];
  let stderr = '';
  createInterface({ input: child.stdout }).on('line', (line) => lines.push({ event: JSON.parse(line), at: Date.now() }));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 25_000);
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

    const offsets = lines.map((l) => l.event.offset);
    expect(offsets).toEqual(offsets.map((_, i) => i));
    expect(lines.map((l) => l.event.type)).toEqual(expect.arrayContaining(['step_started', 'message_start', 'message_complete', 'step_completed']));
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

    const from = first.lines[Math.floor(first.lines.length / 2)].event.offset;
    const resumed = await follow(id, ['--from', String(from)]);
    expect({ code: resumed.code, stderr: resumed.stderr }).toEqual({ code: 0, stderr: '' });
    expect(resumed.lines.map((l) => l.event)).toEqual(first.lines.filter((l) => l.event.offset >= from).map((l) => l.event));
  });
}, 60_000);
