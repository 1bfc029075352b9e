/**
 * `cadre ask` on the people example: routed by the rules (or a model), answered by plan runs whose
 * steps call typed TypeScript agents over a real embedded database (PGlite).
 */
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { ask } from '../src/ask/ask';
import { buildPlan } from '../src/ask/plan';
import { parseRoutes } from '../src/ask/routes';
import { classify } from '../src/ask/rules';
import type { ChildProcess } from 'node:child_process';
import { CadreClient } from '../src/client/client';
import { type FakeModelServer, startFakeModelServer } from './support/fake-model-server';
import { runCadre, testServerEnv } from './support/cli';
import { type Harness, compile, kill, startWorkerProcess, uniqueId, waitUntil } from './support/harness';

const EXAMPLE = path.join(__dirname, '..', 'examples', 'people');
const CONFIG = path.join(EXAMPLE, 'cadre.config.yaml');
const doc = parseYaml(readFileSync(CONFIG, 'utf8')) as unknown;
const intents = parseRoutes(doc, CONFIG);
const PYTHON_PEOPLE = ['Ada Byron', 'Grace Hopper', 'Guido Rossi', 'Ken Tamura', 'Margaret Hamilton', 'Radia Perlman'];

// PGlite loads its WebAssembly through dynamic imports, which jest's module sandbox refuses: the
// worker runs in a process of its own, configured as a user's would be (CADRE_CONFIG).
let server: FakeModelServer;
let worker: ChildProcess;
let h: Harness;

beforeAll(async () => {
  server = await startFakeModelServer();
  const taskQueue = uniqueId('ask');
  worker = await startWorkerProcess(taskQueue, { CADRE_CONFIG: CONFIG, OPENAI_API_KEY: 'sk-test-ask', OPENAI_BASE_URL: server.baseURL, CADRE_MODEL: '' });
  h = { client: await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS }), taskQueue };
});

afterAll(async () => {
  await kill(worker, 'SIGTERM');
  await h.client.close();
  await server.close();
});

const withPeople = <T>(fn: (h: Harness) => Promise<T>): Promise<T> => fn(h);

describe('the rules classifier', () => {
  test('words in order, slots next to their words, the most specific intent wins, and it says which rule matched', () => {
    const single = classify('Show me people with Python skills', intents);
    expect([single?.intent.name, single?.pattern, single?.slots]).toEqual(['people_by_skill', 'people with {skill}', { skill: 'Python' }]);
    const multi = classify('Break down the people with C++ skills by city, please', intents);
    expect([multi?.intent.name, multi?.pattern, multi?.slots, multi?.alsoMatched]).toEqual(['skill_breakdown', 'people with {skill} by {groupBy}', { skill: 'C++', groupBy: 'city' }, ['people_by_skill']]);
    expect(classify('any Rust people?', intents)?.slots).toEqual({ skill: 'Rust' });
    expect(classify('Show me people', intents)?.slots).toEqual({});
    expect(classify('What is the weather in Oslo?', intents)).toBeUndefined();
  });

  test('a missing or unfit slot becomes a question first, and the steps read its answer', () => {
    const built = buildPlan(intents[1], { skill: 'Python', groupBy: 'shoe size' }, EXAMPLE);
    expect(built.asking).toEqual([{ slot: 'groupBy', why: '"shoe size" is not one of department, city, level' }]);
    expect(built.inputs).toEqual({ skill: 'Python' });
    expect(built.plan.steps.map((s) => s.id)).toEqual(['ask_groupBy', 'fetch', 'analyse']);
    expect(built.plan.steps[2].action).toMatchObject({ with: { groupBy: '{{ steps.ask_groupBy.output }}' } });
    expect(built.plan.steps[2].needs.sort()).toEqual(['ask_groupBy', 'fetch']);
  });
});

describe('cadre ask on the people example', () => {
  test('a one-step request returns the rows from the database', async () => {
    await withPeople(async (h) => {
      const started = await ask(h.client, 'Show me people with Python skills', { configPath: CONFIG, taskQueue: h.taskQueue });
      expect(started.intent).toBe('people_by_skill');
      const d = await h.client.result(started.workflowId);
      expect(d.status).toBe('completed');
      expect((d.output as { name: string }[]).map((r) => r.name)).toEqual(PYTHON_PEOPLE);
      expect((d.output as object[])[0]).toEqual({ name: 'Ada Byron', department: 'Research', city: 'London', level: 'expert' });
    });
  });

  test('a two-step request chains the query and the analysis, the second reading the first', async () => {
    await withPeople(async (h) => {
      const started = await ask(h.client, 'Break down people with Python skills by department', { configPath: CONFIG, taskQueue: h.taskQueue });
      const d = await h.client.result(started.workflowId);
      expect(d.steps.map((s) => [s.id, s.status])).toEqual([
        ['fetch', 'completed'],
        ['analyse', 'completed'],
      ]);
      expect(d.output).toEqual({
        total: 6,
        groupBy: 'department',
        groups: [
          { department: 'Data', count: 3, share: 50 },
          { department: 'Research', count: 2, share: 33.3 },
          { department: 'Platform', count: 1, share: 16.7 },
        ],
      });
    });
  });

  test('an ambiguous request waits for an answer, then answers with it', async () => {
    await withPeople(async (h) => {
      const started = await ask(h.client, 'Show me people', { configPath: CONFIG, taskQueue: h.taskQueue });
      expect(started.asking).toEqual([{ slot: 'skill', why: 'the request does not say' }]);
      const waiting = await waitUntil(h, started.workflowId, (d) => d.waiting.length > 0);
      expect(waiting.status).toBe('waiting');
      expect(waiting.waiting[0]).toMatchObject({ id: 'ask_skill', prompt: 'Which skill should they have?' });
      await h.client.answer(started.workflowId, 'ask_skill', 'rust');
      const d = await h.client.result(started.workflowId);
      expect(d.output).toEqual([{ name: 'Linus Ek', department: 'Platform', city: 'Oslo', level: 'intermediate' }]);
    });
  });

  test('an answer is a query parameter, never SQL; the records agent only reads: a query that writes fails its step', async () => {
    await withPeople(async (h) => {
      const started = await ask(h.client, 'Show me people', { configPath: CONFIG, taskQueue: h.taskQueue });
      await waitUntil(h, started.workflowId, (d) => d.waiting.length > 0);
      // The answer is a parameter, never SQL: a hostile one finds nobody.
      await h.client.answer(started.workflowId, 'ask_skill', "x'; DELETE FROM people; --");
      const d = await h.client.result(started.workflowId);
      expect(d.output).toEqual([]);
      const writer = compile(
        `
name: write-attempt
steps:
  - { id: wipe, tool: ts:records.executeQuery, with: { sql: "DELETE FROM skills" }, retry: { maximumAttempts: 1 } }
`,
        EXAMPLE,
      );
      const { workflowId } = await h.client.start(writer, {}, { workflowId: uniqueId('write-attempt'), taskQueue: h.taskQueue });
      const failed = await h.client.result(workflowId);
      expect(failed.status).toBe('failed');
      expect(failed.steps[0].error).toContain('read-only transaction');
      const again = await ask(h.client, 'Show me people with Python skills', { configPath: CONFIG, taskQueue: h.taskQueue });
      expect(((await h.client.result(again.workflowId)).output as object[]).length).toBe(6);
    });
  });

  test('with a model, an agent step routes the request; the rest is the same plan', async () => {
    server.enqueue({ text: JSON.stringify({ intent: 'skill_breakdown', slots: { skill: 'SQL', groupBy: 'City' } }) });
    {
      await withPeople(async (h) => {
        const started = await ask(h.client, 'where do our SQL folks sit?', { configPath: CONFIG, taskQueue: h.taskQueue, model: 'openai:gpt-4o-mini' });
        expect([started.intent, started.by, started.inputs]).toEqual(['skill_breakdown', { model: 'openai:gpt-4o-mini' }, { skill: 'SQL', groupBy: 'city' }]);
        const d = await h.client.result(started.workflowId);
        expect((d.output as { groups: unknown[] }).groups).toEqual([
          { city: 'Amsterdam', count: 1, share: 50 },
          { city: 'Tokyo', count: 1, share: 50 },
        ]);
        expect(JSON.stringify(server.requests[0].body)).toContain('where do our SQL folks sit?');
      });
    }
  });

  test('from the CLI, in the example folder: the answer, and a clear error for a request nothing matches', async () => {
    await withPeople(async (h) => {
      const env = { ...testServerEnv(), CADRE_TASK_QUEUE: h.taskQueue };
      const answered = await runCadre(['ask', 'who knows Go?'], EXAMPLE, env);
      expect(answered.code).toBe(0);
      expect(JSON.parse(answered.stdout)).toEqual([{ name: 'Dennis Ritchie', department: 'Platform', city: 'London', level: 'intermediate' }]);
      expect(answered.stderr).toContain('intent people_by_skill (by rule "who knows {skill}"; skill=Go)');
      const none = await runCadre(['ask', 'What is the weather in Oslo?'], EXAMPLE, env);
      expect(none.code).toBe(1);
      expect(none.stderr).toContain('no intent matches "What is the weather in Oslo?"; cadre can answer:');
      expect(none.stderr).toContain('people_by_skill: the people who have a skill');
    });
  });
});

