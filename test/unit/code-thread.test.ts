/**
 * The code tools' thread (src/activities/tools/code/thread.ts): the tools run and keep their warm
 * services there, not on the worker's main thread; a thread that ends or runs out of its heap fails
 * the calls waiting on it and the next call starts another; an idle one ends; a cancelled call stops
 * waiting; an agent's start builds its workspace's service ahead, into a free place only; a new
 * thread loads TypeScript from the code cache an earlier one wrote.
 */
import { mkdtempSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isMainThread, threadId } from 'node:worker_threads';
import { INLINE_OUTPUT_LIMITS, defaultToolSandbox } from '../../src/activities/tools/context';
import { PROTECTED_PATHS, openBoundary } from '../../src/activities/confinement';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../src/activities';
import { CODE_THREAD, codeThreadStarted, codeThreadState, evictCodeThread, inCodeThread, prewarmCodeThread, stopCodeThread } from '../../src/activities/tools/code/thread';
import { warmProjects } from '../../src/activities/tools/code/warm';
import { runTool } from '../../src/activities/tools/run-tool';
import { until } from '../support/until';

const defaults = { ...CODE_THREAD };
afterEach(async () => {
  Object.assign(CODE_THREAD, defaults);
  await stopCodeThread();
});

function workspace(): string {
  const ws = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'cadre-code-thread-')));
  writeFileSync(path.join(ws, 'tsconfig.json'), JSON.stringify({ compilerOptions: { lib: ['ES2022'], strict: true } }));
  writeFileSync(path.join(ws, 'a.ts'), 'export function twice(x: number): number {\n  return x * 2;\n}\n');
  writeFileSync(path.join(ws, 'b.ts'), "import { twice } from './a';\nexport const four = twice(2);\n");
  return ws;
}

const references = (ws: string, signal = new AbortController().signal) =>
  runTool('code.find_references', { file: 'a.ts', symbol: 'twice' }, { workspace: ws, stepId: 'nav', attempt: 1, signal, limits: INLINE_OUTPUT_LIMITS, sandbox: defaultToolSandbox() }) as Promise<{ references: { file: string }[] }>;

describe("the code tools' thread", () => {
  test('the tools run there and keep their warm service there, not on the main thread', async () => {
    const ws = workspace();
    expect((await references(ws)).references.map((r) => r.file)).toEqual(['a.ts', 'b.ts', 'b.ts']);
    const state = await codeThreadState();
    expect(isMainThread).toBe(true);
    expect(state.threadId).not.toBe(threadId);
    expect(state.projects.map((p) => p.root)).toEqual([ws]);
    expect(warmProjects()).toEqual([]);
    await evictCodeThread();
    expect((await codeThreadState()).projects).toEqual([]);
  }, 60_000);

  test("an agent's toolset with code tools starts the thread and builds its workspace's service; one without does not", async () => {
    const activities = createActivities();
    // An activity (it heartbeats): run in the SDK's activity context.
    const agentToolset = (request: Parameters<typeof activities.agentToolset>[0]) => new MockActivityEnvironment().run(activities.agentToolset, request);
    const ws = workspace();
    await agentToolset({ tools: ['fs.read', 'shell'], workspace: ws });
    expect(codeThreadStarted()).toBe(false);
    await agentToolset({ tools: ['fs.read', 'code.find_references'] });
    expect(codeThreadStarted()).toBe(true);
    expect((await codeThreadState()).projects).toEqual([]);
    // With the workspace, the service is built while the toolset's answer goes back (and the model takes its turn).
    await agentToolset({ tools: ['code.find_references'], workspace: ws });
    // Under a loaded machine's CI the build can take seconds: polled by time, not by a count of polls.
    const state = await until('the workspace service built ahead', async () => {
      const seen = await codeThreadState();
      return seen.projects.length > 0 ? seen : undefined;
    }, 30_000, 20);
    expect(state.projects.map((p) => p.root)).toEqual([ws]);
    // A workspace that is not there: nothing built, nothing thrown (the first call will say why).
    await agentToolset({ tools: ['code.find_references'], workspace: path.join(ws, 'missing') });
    expect((await codeThreadState()).projects.map((p) => p.root)).toEqual([ws]);
  }, 60_000);

  test('building ahead takes a free place only: it evicts no service that calls use', async () => {
    const used = [workspace(), workspace(), workspace(), workspace()];
    for (const ws of used) await references(ws);
    const ahead = await openBoundary(workspace(), { name: 'workspace', deny: PROTECTED_PATHS });
    expect(await prewarmCodeThread(ahead)).toBe(false);
    expect((await codeThreadState()).projects.map((p) => p.root).sort()).toEqual([...used].sort());
    await evictCodeThread();
    expect(await prewarmCodeThread(ahead)).toBe(true);
    expect((await codeThreadState()).projects.map((p) => p.root)).toEqual([ahead.root]);
  }, 60_000);

  test('a thread that ends under a call fails it; the next call starts another', async () => {
    const ws = workspace();
    // Asked straight away (runTool would open the workspace first): the new thread is still loading TypeScript when it ends.
    const boundary = await openBoundary(ws, { name: 'workspace', deny: PROTECTED_PATHS });
    const cut = inCodeThread('code.find_references')({ file: 'a.ts', symbol: 'twice' }, { boundary, signal: new AbortController().signal });
    await stopCodeThread();
    await expect(cut).rejects.toThrow("the code tools' thread ended");
    expect((await references(ws)).references).toHaveLength(3);
  }, 60_000);

  test('a thread out of its heap fails the call as TooLarge, and the worker goes on', async () => {
    CODE_THREAD.heapMb = 8;
    await expect(references(workspace())).rejects.toMatchObject({ type: 'TooLarge', nonRetryable: true, message: expect.stringContaining('8 MB heap') });
    Object.assign(CODE_THREAD, defaults);
    expect((await references(workspace())).references).toHaveLength(3);
  }, 60_000);

  test('a thread no call has used for CODE_THREAD.idleMs ends; the next call starts another', async () => {
    CODE_THREAD.idleMs = 300;
    const ws = workspace();
    expect((await references(ws)).references).toHaveLength(3);
    const used = await codeThreadState();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const next = await codeThreadState();
    expect(next.threadId).not.toBe(used.threadId);
    expect(next.projects).toEqual([]);
  }, 60_000);

  test('a cancelled call stops waiting; the thread goes on', async () => {
    const ws = workspace();
    const boundary = await openBoundary(ws, { name: 'workspace', deny: PROTECTED_PATHS });
    const controller = new AbortController();
    const call = inCodeThread('code.find_references')({ file: 'a.ts', symbol: 'twice' }, { boundary, signal: controller.signal });
    controller.abort(new Error('step cancelled'));
    await expect(call).rejects.toThrow('step cancelled');
    expect((await references(ws)).references).toHaveLength(3);
  }, 60_000);

  test('TypeScript loads from the code cache a thread wrote once it built a service', async () => {
    const before = process.env.CADRE_CACHE_DIR;
    const cache = mkdtempSync(path.join(os.tmpdir(), 'cadre-code-cache-'));
    // A thread takes the environment as it starts.
    process.env.CADRE_CACHE_DIR = cache;
    try {
      const ws = workspace();
      const answer = (await references(ws)).references;
      expect((await codeThreadState()).typescript).toMatchObject({ cache: 'miss', written: true });
      expect(readdirSync(path.join(cache, 'v8'))).toEqual([expect.stringMatching(/^typescript-[0-9a-f]{24}\.v8$/)]);
      await stopCodeThread();
      expect((await references(ws)).references).toEqual(answer);
      expect((await codeThreadState()).typescript).toMatchObject({ cache: 'hit', written: false });
    } finally {
      if (before === undefined) delete process.env.CADRE_CACHE_DIR;
      else process.env.CADRE_CACHE_DIR = before;
    }
  }, 60_000);
});
