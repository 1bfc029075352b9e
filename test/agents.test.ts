/**
 * Agent and decide steps on the dev server: the agentTask child workflow's model ⇄ tools loop,
 * through the real AI SDK clients over HTTP to a fake OpenAI/Anthropic server, with approvals and
 * the content-free audit log.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { modelSettings } from '../src/providers/config';
import { auditFile } from '../src/store/audit-files';
import { auditSinks } from '../src/worker/audit-log';
import { type Diagnostics, agentDiagnosticsQuery } from '../src/protocol/definitions';
import { type FakeModelServer, type RecordedRequest, type TextToolCallStyle, fakeTokens, startFakeModelServer } from './support/fake-model-server';
import { windowOf } from '../src/activities/tools/text-views';
import { runCadre, testServerEnv } from './support/cli';
import { git, tempRepository } from './support/git-repo';
import { type Harness, compile, startPlan, step, tempWorkspace, waitUntil, withWorker } from './support/harness';
import { TASKS } from '../bench/local-model-tasks';
import { runTasks, summary, table } from '../bench/local-model-run';

const KEY = 'sk-test-agents-7c1d9e';
let server: FakeModelServer;
let auditDir: string;

beforeAll(async () => {
  server = await startFakeModelServer();
});
afterAll(() => server.close());
beforeEach(() => {
  server.requests.splice(0);
  server.clearQueue();
  auditDir = mkdtempSync(path.join(os.tmpdir(), 'cadre-audit-'));
});

function withAgents<T>(fn: (h: Harness) => Promise<T>): Promise<T> {
  // Local endpoints named for their toolCalls mode: `openai-compatible:xml` is a small model read in xml.
  const local = (toolCalls: 'required' | 'native' | 'json' | 'xml' | 'qwen') => ({ baseURL: server.baseURL, model: 'qwen2.5-coder-1.5b', toolCalls });
  const compatible = { required: local('required'), native: local('native'), json: local('json'), xml: local('xml'), qwen: local('qwen') };
  const models = modelSettings({ anthropic: { baseURL: server.baseURL }, compatible }, { OPENAI_API_KEY: KEY, OPENAI_BASE_URL: server.baseURL, ANTHROPIC_API_KEY: KEY });
  return withWorker(fn, { activityDeps: { models }, auditDir });
}

/** The messages the model was sent in request `i`, as OpenAI chat messages. */
function messagesOf(request: RecordedRequest): { role: string; content?: unknown; tool_call_id?: string }[] {
  return request.body.messages as { role: string; content?: unknown; tool_call_id?: string }[];
}

function toolResults(request: RecordedRequest): Record<string, string> {
  return Object.fromEntries(messagesOf(request).filter((m) => m.role === 'tool').map((m) => [m.tool_call_id as string, String(m.content)]));
}

function auditLines(workflowId: string): Record<string, unknown>[] {
  const file = auditFile(auditDir, workflowId);
  return readFileSync(file, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe('agent steps', () => {
  test('a multi-turn tool loop: two tool calls of one turn both run, results go back, the final answer is the output', async () => {
    const ws = tempWorkspace();
    writeFileSync(path.join(ws, 'notes.txt'), 'MARKER-FILE-CONTENT-51f2');
    const plan = compile(
      `
name: agent-loop
steps:
  - id: writer
    agent:
      prompt: "MARKER-PROMPT-9a3e: summarise notes.txt"
      system: "MARKER-SYSTEM-44b0"
      model: openai:gpt-4o-mini
      tools: [fs.read, fs.write, shell]
`,
      ws,
    );
    server.enqueue(
      { toolCalls: [{ id: 'c1', name: 'fs_read', args: { path: 'notes.txt' } }], usage: { inputTokens: 10, outputTokens: 5 } },
      {
        toolCalls: [
          { id: 'c2', name: 'fs_write', args: { path: 'summary.txt', content: 'MARKER-ARGUMENT-0c7d' } },
          { id: 'c3', name: 'shell', args: { command: 'echo MARKER-SHELL-OUT-8e21' } },
        ],
        usage: { inputTokens: 20, outputTokens: 6 },
      },
      { text: 'MARKER-ANSWER-3b9f', usage: { inputTokens: 30, outputTokens: 7 } },
    );
    await withAgents(async (h) => {
      const id = await startPlan(h, plan);
      const d = await h.client.result(id);
      expect(d.status).toBe('completed');
      const writer = step(d, 'writer');
      expect(d.steps[0].status).toBe('completed');
      expect(writer.agent).toEqual({ workflowId: `${id}/writer`, turns: 3, toolCalls: 3, usage: { inputTokens: 60, outputTokens: 18 } });
      expect(readFileSync(path.join(ws, 'summary.txt'), 'utf8')).toBe('MARKER-ARGUMENT-0c7d');
      expect(server.requests).toHaveLength(3);
      // The tools were offered under names providers take, with JSON Schemas from zod.
      const offered = (server.requests[0].body.tools as { function: { name: string; parameters: { properties: Record<string, unknown> } } }[]).map((t) => t.function);
      expect(offered.map((t) => t.name).sort()).toEqual(['fs_read', 'fs_write', 'shell']);
      expect(Object.keys(offered.find((t) => t.name === 'fs_read')?.parameters.properties ?? {})).toEqual(['path', 'from', 'to']);
      expect(toolResults(server.requests[1]).c1).toContain('MARKER-FILE-CONTENT-51f2');
      // Both calls of turn two ran, and their results went back together.
      const third = toolResults(server.requests[2]);
      expect(Object.keys(third).sort()).toEqual(['c1', 'c2', 'c3']);
      expect(third.c3).toContain('MARKER-SHELL-OUT-8e21');
      expect(JSON.stringify(d.steps)).not.toContain('MARKER-PROMPT');

      // The audit log holds every tool call, and none of the content.
      const lines = auditLines(id);
      const text = readFileSync(auditFile(auditDir, id), 'utf8');
      for (const marker of ['MARKER-PROMPT', 'MARKER-SYSTEM', 'MARKER-FILE-CONTENT', 'MARKER-ARGUMENT', 'MARKER-SHELL-OUT', 'MARKER-ANSWER', 'notes.txt', 'summary.txt', 'echo']) {
        expect(text).not.toContain(marker);
      }
      const started = lines.filter((l) => l.event === 'tool.started').map((l) => `${l.call} ${l.tool}`);
      expect(started.sort()).toEqual(['1.1 fs.read', '2.1 fs.write', '2.2 shell']);
      expect(lines.filter((l) => l.event === 'tool.finished' && l.outcome === 'ok')).toHaveLength(3);
      expect(lines.filter((l) => l.event === 'model.turn').map((l) => [l.turn, l.inputTokens, l.outputTokens])).toEqual([
        [1, 10, 5],
        [2, 20, 6],
        [3, 30, 7],
      ]);
      expect(lines[0]).toMatchObject({ event: 'message.received', step: 'writer', run: id, chars: 'MARKER-PROMPT-9a3e: summarise notes.txt'.length });
      expect(lines.at(-1)).toMatchObject({ event: 'agent.finished', outcome: 'completed' });

      // Replaying the agent's history writes nothing more.
      const before = text;
      const history = await h.client.client.workflow.getHandle(`${id}/writer`).fetchHistory();
      // The run's prebuilt bundle of the same workflows: bundling them again here took 3 s of CPU.
      await Worker.runReplayHistory({ workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string }, sinks: auditSinks(auditDir) }, history, `${id}/writer`);
      expect(readFileSync(auditFile(auditDir, id), 'utf8')).toBe(before);
    });
  });

  test('bad tool calls reach the model as error results: invalid arguments, an unknown tool, a failing tool', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: agent-errors
steps:
  - { id: a, agent: { role: tester, prompt: go, model: "openai:gpt-4o-mini", tools: [fs.read] } }
`,
      ws,
    );
    server.enqueue(
      {
        toolCalls: [
          { id: 'bad', name: 'fs_read', args: { file: 'x' } },
          { id: 'made_up', name: 'rm_rf', args: {} },
          { id: 'missing', name: 'fs_read', args: { path: 'nope.txt' } },
          { id: 'escape', name: 'fs_read', args: { path: '../../etc/passwd' } },
        ],
      },
      { text: 'done' },
    );
    await withAgents(async (h) => {
      const id = await startPlan(h, plan);
      const d = await h.client.result(id);
      expect(d.status).toBe('completed');
      expect(d.output).toBeUndefined();
      // A role without a system prompt says who the agent is.
      expect(messagesOf(server.requests[0])[0]).toEqual({ role: 'system', content: 'You are the tester of the team.' });
      const results = toolResults(server.requests[1]);
      expect(results.bad).toContain("do not match fs_read's schema");
      expect(results.made_up).toContain('no tool named "rm_rf" was offered');
      expect(results.missing).toContain('FileNotFound');
      expect(results.escape).toContain('OutsideWorkspace');
      const refused = auditLines(id).filter((l) => l.event === 'tool.refused').map((l) => l.outcome);
      expect(refused.sort()).toEqual(['invalid_arguments', 'unknown_tool']);
    });
  });

  test("a command that exits non-zero runs once: its exit goes back to the model, never retried, so its side effects are not repeated", async () => {
    const ws = tempWorkspace();
    const plan = compile(`name: agent-shell-exit\nsteps:\n  - { id: a, agent: { prompt: go, model: "openai:gpt-4o-mini", tools: [shell] } }\n`, ws);
    server.enqueue({ toolCalls: [{ id: 'append', name: 'shell', args: { command: 'echo ran >> runs.txt; exit 7' } }] }, { text: 'it failed' });
    await withAgents(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('completed');
      expect(readFileSync(path.join(ws, 'runs.txt'), 'utf8')).toBe('ran\n');
      expect(toolResults(server.requests[1]).append).toContain('command exited with code 7');
    });
  });

  test('structured output: a matching answer is the output; one that does not match fails the step at once, saying so', async () => {
    const ws = tempWorkspace();
    const schema = `{ type: object, properties: { urgent: { type: boolean }, reason: { type: string } }, required: [urgent, reason], additionalProperties: false }`;
    const plan = compile(
      `
name: agent-output
steps:
  - { id: first, agent: { prompt: "triage", model: "anthropic:claude-sonnet-4-5", output: ${schema} } }
  - { id: second, dependsOn: [first], agent: { prompt: "again: {{ steps.first.output.reason }}", model: "anthropic:claude-sonnet-4-5", output: ${schema} } }
`,
      ws,
    );
    server.enqueue({ text: '{"urgent": true, "reason": "server down"}' }, { text: '{"urgent": "very"}' });
    await withAgents(async (h) => {
      const id = await startPlan(h, plan);
      const d = await h.client.result(id).catch(() => h.client.diagnostics(id));
      expect(step(d, 'first').status).toBe('completed');
      expect(d.status).toBe('failed');
      expect(step(d, 'second').error).toContain('StructuredOutputInvalid');
      expect(step(d, 'second').error).toContain('does not match the output schema');
      expect(server.requests.map((r) => r.path)).toEqual(['/v1/messages', '/v1/messages']);
      // The first step's structured output fed the second prompt.
      expect(JSON.stringify(server.requests[1].body.messages)).toContain('again: server down');
    });
  });

  test('a 200 cut short is retried with backoff and the turn completes, paid for once more', async () => {
    const ws = tempWorkspace();
    const plan = compile(`name: agent-garbled\nsteps:\n  - { id: hi, agent: { prompt: hi, model: "openai:gpt-4o-mini" } }\noutput: "{{ steps.hi.output }}"\n`, ws);
    server.enqueue({ status: 200, raw: '{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"mess' }, { text: 'whole this time' });
    await withAgents(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('completed');
      expect(d.output).toBe('whole this time');
      expect(server.requests).toHaveLength(2);
    });
  });

  test('a 429 with Retry-After: 2 is retried after at least 2 s; a 401 fails at once naming the fix', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: agent-http
steps:
  - { id: limited, agent: { prompt: hi, model: "openai:gpt-4o-mini" } }
  - { id: refused, dependsOn: [limited], agent: { prompt: hi, model: "openai:gpt-4o-mini" } }
`,
      ws,
    );
    server.enqueue({ status: 429, headers: { 'retry-after': '2' } }, { text: 'after the wait' }, { status: 401, body: { error: { message: 'Incorrect API key' } } });
    await withAgents(async (h) => {
      const id = await startPlan(h, plan);
      const d = await h.client.result(id).catch(() => h.client.diagnostics(id));
      expect(step(d, 'limited').status).toBe('completed');
      expect(server.requests[1].at - server.requests[0].at).toBeGreaterThanOrEqual(2000);
      expect(d.status).toBe('failed');
      expect(step(d, 'refused').error).toContain('ModelAuthFailed');
      expect(step(d, 'refused').error).toContain('set OPENAI_API_KEY to a valid key');
      expect(step(d, 'refused').error).not.toContain(KEY);
      expect(server.requests).toHaveLength(3);
    });
  });

  test('maxTurns and the token budget end an agent with the reason', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: agent-limits
steps:
  - { id: turns, agent: { prompt: go, model: "openai:gpt-4o-mini", tools: [fs.read], maxTurns: 2 }, onFailure: skip }
  - { id: tokens, dependsOn: [turns], agent: { prompt: go, model: "openai:gpt-4o-mini", maxTokens: 100 } }
`,
      ws,
    );
    const loop = { toolCalls: [{ id: 'l', name: 'fs_read', args: { path: 'x' } }] };
    server.enqueue(loop, loop, { text: 'long', usage: { inputTokens: 90, outputTokens: 20 } });
    await withAgents(async (h) => {
      const id = await startPlan(h, plan);
      const d = await h.client.result(id).catch(() => h.client.diagnostics(id));
      expect(step(d, 'turns').status).toBe('skipped');
      expect(d.errors[0].message).toContain('AgentTurnLimit: no final answer after 2 model turns: raise maxTurns or narrow the prompt');
      expect(step(d, 'turns').agent?.turns).toBe(2);
      expect(step(d, 'tokens').error).toContain('AgentTokenBudget: used 110 tokens over 1 turns; the budget is 100');
      expect(server.requests).toHaveLength(3);
    });
  });
});

test('an agent in a worktree: big outputs go to the plan workspace\'s blob store, and the worktree stays clean', async () => {
  const { home, repo } = tempRepository('cadre-agent-wt-');
  writeFileSync(path.join(repo, 'big.txt'), 'b'.repeat(20_000));
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'big');
  const ws = path.join(home, 'ws');
  mkdirSync(ws);
  const plan = compile(
    `
name: agent-worktree
steps:
  - { id: reader, worktree: { repo: ../repo }, agent: { prompt: "read big.txt", model: "openai:gpt-4o-mini", tools: [fs.read] } }
`,
    ws,
  );
  server.enqueue({ toolCalls: [{ id: 'r', name: 'fs_read', args: { path: 'big.txt' } }] }, { text: 'read it' });
  await withAgents(async (h) => {
    const id = await startPlan(h, plan);
    const d = await h.client.result(id);
    expect(d.status).toBe('completed');
    // The model read the file; history holds a reference, not 20,000 characters.
    expect(toolResults(server.requests.at(-1) as RecordedRequest).r).toContain('b'.repeat(1000));
    const history = await h.client.client.workflow.getHandle(`${id}/reader`).fetchHistory();
    expect(JSON.stringify(history).length).toBeLessThan(40_000);
    expect(existsSync(path.join(ws, '.cadre', 'blobs'))).toBe(true);
    expect(d.worktrees?.map((w) => w.state)).toEqual(['removed']);
  });
});

describe('small local models (tool calls written as text)', () => {
  test('each non-native mode drives an agent to completion: the file is really written, and tool results go back in the mode\'s format', async () => {
    const ws = tempWorkspace();
    writeFileSync(path.join(ws, 'notes.txt'), 'NOTES-51f2: ship on Friday');
    const agent = (mode: string, after?: string) =>
      `  - { id: ${mode}, ${after ? `dependsOn: [${after}], ` : ''}agent: { prompt: "read notes.txt, write a summary to ${mode}.txt", model: "openai-compatible:${mode}", tools: [fs.read, fs.write] } }`;
    const output = 'output: { json: "{{ steps.json.output }}", xml: "{{ steps.xml.output }}", qwen: "{{ steps.qwen.output }}" }';
    const plan = compile(['name: local-modes', 'steps:', agent('json'), agent('xml', 'json'), agent('qwen', 'xml'), output].join('\n'), ws);
    // The steps run one after another, so the fake server's queue answers them in order; json mode gets both of its styles.
    const turns = (mode: string, read: TextToolCallStyle, write: TextToolCallStyle) => [
      { text: 'I will read the notes first.', toolCalls: [{ id: 'r', name: 'fs_read', args: { path: 'notes.txt' } }], toolCallsAs: read },
      { toolCalls: [{ id: 'w', name: 'fs_write', args: { path: `${mode}.txt`, content: `summary by ${mode}: ship on Friday` } }], toolCallsAs: write },
      { text: `Wrote ${mode}.txt.` },
    ];
    server.enqueue(...turns('json', 'tool-call-tags', 'json-block'), ...turns('xml', 'xml', 'xml'), ...turns('qwen', 'qwen', 'qwen'));
    await withAgents(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('completed');
      for (const mode of ['json', 'xml', 'qwen']) {
        expect(readFileSync(path.join(ws, `${mode}.txt`), 'utf8')).toBe(`summary by ${mode}: ship on Friday`);
        expect(step(d, mode).agent).toMatchObject({ turns: 3, toolCalls: 2 });
      }
      expect(d.output).toEqual({ json: 'Wrote json.txt.', xml: 'Wrote xml.txt.', qwen: 'Wrote qwen.txt.' });
      expect(server.requests).toHaveLength(9);
      // No native tools went out; the file's content came back to the model as text, in each mode's format.
      expect(server.requests.every((r) => r.body.tools === undefined)).toBe(true);
      const resultOf = (i: number) => JSON.stringify(messagesOf(server.requests[i]).at(-1));
      expect(resultOf(1)).toMatch(/<tool_response>.*NOTES-51f2/);
      expect(resultOf(4)).toMatch(/<tool_response>.*NOTES-51f2/);
      expect(resultOf(7)).toMatch(/<tool_response>.*NOTES-51f2/);
    });
  });

  test('toolCalls: required: every turn a call, and the finish call ends the step with its structured answer (a finish that does not match is sent back, and the first after a change once for review)', async () => {
    const ws = tempWorkspace();
    writeFileSync(path.join(ws, 'notes.txt'), 'ship on Friday\nfreeze on Thursday\n');
    const plan = compile(
      `
name: local-required
steps:
  - id: count
    agent:
      prompt: "How many lines does notes.txt have? Write the count to count.txt."
      model: "openai-compatible:required"
      tools: [fs.read, fs.write]
      output: { type: object, properties: { lines: { type: integer }, file: { type: string } }, required: [lines, file], additionalProperties: false }
output: "{{ steps.count.output }}"
`,
      ws,
    );
    server.enqueue(
      { toolCalls: [{ id: 'r', name: 'fs_read', args: { path: 'notes.txt' } }] },
      { toolCalls: [{ id: 'w', name: 'fs_write', args: { path: 'count.txt', content: '2' } }] },
      // The fake server, like llama.cpp's grammar, sends these answers as calls to finish.
      { text: '{"lines": "two", "file": "count.txt"}' },
      { text: '{"lines": 2, "file": "count.txt"}' },
      { text: '{"lines": 2, "file": "count.txt"}' },
    );
    await withAgents(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('completed');
      expect(d.output).toEqual({ lines: 2, file: 'count.txt' });
      expect(readFileSync(path.join(ws, 'count.txt'), 'utf8')).toBe('2');
      expect(step(d, 'count').agent).toMatchObject({ turns: 5 });
      expect(server.requests.map((r) => r.body.tool_choice)).toEqual(Array(5).fill('required'));
      // The finish that did not match went back to the model as a tool error, with the reason.
      expect(Object.values(toolResults(server.requests[3]))).toContainEqual(expect.stringMatching(/the arguments do not match finish's schema: lines: /));
      // The first finish after the write went back once, with the write beside the task; the next was taken.
      expect(Object.values(toolResults(server.requests[4]))).toContainEqual(expect.stringMatching(/^not finished: check your work against the task first\. What you changed: wrote count\.txt\. The task was: "How many lines/));
    });
  });

  test('a step whose task is a change (mustChange) never completes without it: required sends its finish back twice, a text mode corrects once, then AgentMadeNoChange with the answer; a listed file must be the one written', async () => {
    const ws = tempWorkspace();
    writeFileSync(path.join(ws, 'notes.txt'), 'a\nb\nc\n');
    const agent = (id: string, mode: string, mustChange: string, extra = '') =>
      `  - { id: ${id}, agent: { prompt: "Count the lines of notes.txt and write the number to ${id}.txt.", model: "openai-compatible:${mode}", tools: [fs.read, fs.write], mustChange: ${mustChange} }, onFailure: skip${extra} }`;
    const steps = [agent('req', 'required', 'true'), agent('json', 'json', 'true', ', dependsOn: [req]'), agent('done', 'json', '[done.txt]', ', dependsOn: [json]')];
    const plan = compile(`name: local-must-change\nsteps:\n${steps.join('\n')}\noutput: "{{ steps.done.output }}"\n`, ws);
    const read = { toolCalls: [{ id: 'r', name: 'fs_read', args: { path: 'notes.txt' } }] };
    server.enqueue(
      // required: a read, then three finishes with the answer in words and nothing written.
      read,
      { text: 'It has 3 lines.' },
      { text: 'It has 3 lines.' },
      { text: 'The count is not available.' },
      // json: a read, then two answers in words.
      { ...read, toolCallsAs: 'json-block' as const },
      { text: 'It has 3 lines.' },
      { text: 'Three.' },
      // json with a file to write: another file is no change of it; told once, the model writes it and the step completes.
      { toolCalls: [{ id: 'o', name: 'fs_write', args: { path: 'other.txt', content: '3' } }], toolCallsAs: 'json-block' as const },
      { text: 'Three lines.' },
      { toolCalls: [{ id: 'w', name: 'fs_write', args: { path: './done.txt', content: '3' } }], toolCallsAs: 'json-block' as const },
      { text: 'Wrote 3 to done.txt.' },
    );
    await withAgents(async (h) => {
      const id = await startPlan(h, plan);
      const d = await h.client.result(id);
      expect(d.status).toBe('completed');
      expect(step(d, 'req').status).toBe('skipped');
      expect(step(d, 'req').error).toContain('AgentMadeNoChange: the agent answered after being told the task is not done, and nothing has changed yet');
      expect(step(d, 'req').error).toContain('its answer was "The count is not available."');
      expect(step(d, 'req').agent).toMatchObject({ turns: 4, toolCalls: 3 });
      expect(step(d, 'json').status).toBe('skipped');
      expect(step(d, 'json').error).toContain('AgentMadeNoChange');
      expect(step(d, 'json').error).toContain('its answer was "Three."');
      expect(step(d, 'done').status).toBe('completed');
      expect(d.output).toBe('Wrote 3 to done.txt.');
      expect(readFileSync(path.join(ws, 'done.txt'), 'utf8')).toBe('3');
      expect(existsSync(path.join(ws, 'req.txt')) || existsSync(path.join(ws, 'json.txt'))).toBe(false);
      // required: the two finishes went back saying the task is a change; json: one correction a step.
      const results = server.requests.slice(2, 4).map((r) => Object.values(toolResults(r)).at(-1));
      expect(results).toEqual(Array(2).fill(expect.stringMatching(/^not finished: this task is done only when the workspace has changed, and nothing has changed yet/)));
      const corrections = server.requests.map((r) => messagesOf(r).flatMap((m) => (m.role === 'user' && String(m.content).startsWith('Not finished: ') ? [String(m.content)] : [])));
      expect(corrections.map((c) => c.length)).toEqual([0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 1]);
      expect(corrections[9][0]).toMatch(/and done\.txt has not been written or changed yet\. Make done\.txt with your tools/);
    });
  });

  test('verify: the plan\'s check runs in the sandbox before an answer is taken; each failure goes back with its exit code and output, the passing check lets the answer through, and failures past verify.attempts fail the step AgentVerifyFailed', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: verify
steps:
  - id: fix
    agent: { prompt: "Write fixed to state.txt.", model: "openai-compatible:native", tools: [fs.read, fs.write], verify: "grep -x fixed state.txt || { echo state.txt holds: $(cat state.txt 2>/dev/null); exit 4; }" }
  - id: never
    dependsOn: [fix]
    onFailure: skip
    agent: { prompt: "Say ok.", model: "openai-compatible:native", tools: [fs.read], verify: { command: "sleep 1; echo still broken >&2; exit 3", attempts: 1 } }
output: "{{ steps.fix.output }}"
`,
      ws,
    );
    const write = (content: string) => ({ toolCalls: [{ id: content, name: 'fs_write', args: { path: 'state.txt', content } }] });
    // fix: an answer before any work, a wrong write, then the right one; never: two answers against a check that cannot pass.
    server.enqueue({ text: 'Done.' }, write('fixd'), { text: 'Done.' }, write('fixed'), { text: 'Fixed.' }, { text: 'ok' }, { text: 'ok again' });
    await withAgents(async (h) => {
      const id = await startPlan(h, plan);
      // While it runs, the check is among the agent's running tools (cadre status lists them).
      const agent = h.client.client.workflow.getHandle(`${id}/never`);
      const running = async (): Promise<string[]> => (await agent.query(agentDiagnosticsQuery).catch(() => undefined))?.running ?? [];
      for (let tries = 0; !(await running()).includes('verify'); tries++) {
        if (tries > 300) throw new Error('the check never showed as running');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const d = await h.client.result(id);
      expect(d.status).toBe('completed');
      expect(d.output).toBe('Fixed.');
      expect(readFileSync(path.join(ws, 'state.txt'), 'utf8')).toBe('fixed');
      expect(step(d, 'fix').agent).toMatchObject({ turns: 5, toolCalls: 2 });
      const told = server.requests.map((r) => messagesOf(r).flatMap((m) => (m.role === 'user' && String(m.content).startsWith('Not finished: the check') ? [String(m.content)] : [])));
      expect(told.map((t) => t.length)).toEqual([0, 1, 1, 2, 2, 0, 1]);
      // The model reads the exit code and what the check printed, from the workspace as it was then.
      expect(told[1][0]).toMatch(/^Not finished: the check `grep -x fixed state\.txt \|\| .*` failed \(exit code 4\), so the task is not done yet\.\nstdout:\nstate\.txt holds:\n/);
      expect(told[1][0]).toContain('(2 more failures are sent back; the next fails the step)');
      expect(told[3][1]).toMatch(/failed \(exit code 4\).*\nstdout:\nstate\.txt holds: fixd\n/s);
      expect(told[6][0]).toMatch(/failed \(exit code 3\).*\nstderr:\nstill broken\n.*\(0 more failures are sent back; the next fails the step\)/s);
      expect(step(d, 'never').status).toBe('skipped');
      expect(step(d, 'never').error).toBe('AgentVerifyFailed: the check `sleep 1; echo still broken >&2; exit 3` still failed (exit code 3) after the agent was told 1 time; it said: stderr:\nstill broken');
      // Each run of the check is audited as the tool `verify`, without its output.
      const checks = auditLines(id).filter((l) => l.tool === 'verify' && l.event === 'tool.finished');
      expect(checks.map((l) => [l.step, l.outcome, l.errorType])).toEqual([
        ['fix', 'error', 'ShellExit'],
        ['fix', 'error', 'ShellExit'],
        ['fix', 'ok', undefined],
        ['never', 'error', 'ShellExit'],
        ['never', 'error', 'ShellExit'],
      ]);
    });
  });

  test('a server whose context holds 2,048 tokens never receives more: the oldest tool results are shortened, saying so; a prompt that cannot fit fails ModelContextTooLong', async () => {
    const tiny = await startFakeModelServer();
    tiny.contextTokens = 2048;
    try {
      const ws = tempWorkspace();
      // 250 lines of 22 characters: a window of 100 is about 900 tokens by cadre's estimate; the three windows
      // together are more than 2,048 by the server's own count, so the conversation sent whole would be refused.
      const big = Array.from({ length: 250 }, (_, i) => `row ${String(i + 1).padStart(3, '0')} ${'x'.repeat(14)}`).join('\n');
      writeFileSync(path.join(ws, 'big.txt'), big);
      const plan = compile(
        `
name: local-context
steps:
  - { id: read, agent: { prompt: "What is on the last row of big.txt?", model: "openai-compatible:tiny", tools: [fs.read] } }
  - { id: huge, dependsOn: [read], onFailure: skip, agent: { prompt: "${'many words '.repeat(800)}", model: "openai-compatible:tiny", tools: [fs.read] } }
output: "{{ steps.read.output }}"
`,
        ws,
      );
      tiny.enqueue(
        { toolCalls: [{ id: 'a', name: 'fs_read', args: { path: 'big.txt' } }] },
        { toolCalls: [{ id: 'b', name: 'fs_read', args: { path: 'big.txt', from: 101 } }] },
        { toolCalls: [{ id: 'c', name: 'fs_read', args: { path: 'big.txt', from: 201 } }] },
        { text: 'The last row is row 250.' },
      );
      const models = modelSettings({ compatible: { tiny: { baseURL: tiny.baseURL, model: 'tiny', toolCalls: 'native' } } }, {});
      await withWorker(
        async (h) => {
          const id = await startPlan(h, plan);
          const d = await h.client.result(id);
          expect(d.status).toBe('completed');
          expect(d.output).toBe('The last row is row 250.');
          // Every request fitted: the server's own count plus the answer's tokens, within 2,048.
          expect(tiny.requests).toHaveLength(4);
          expect(Math.max(...tiny.requests.map((r, i) => tiny.promptTokens[i] + (r.body.max_tokens as number)))).toBeLessThanOrEqual(2048);
          // Sent whole, the last conversation would have been more than the server holds.
          const windows = [windowOf('big.txt', big, 1), windowOf('big.txt', big, 101), windowOf('big.txt', big, 201)].map((w) => w.view);
          const sent = tiny.requests[3].body;
          let n = 0;
          const whole = (sent.messages as { role: string; content?: unknown }[]).map((m) => (m.role === 'tool' ? { ...m, content: windows[n++] } : m));
          expect(fakeTokens({ ...sent, messages: whole }) + (sent.max_tokens as number)).toBeGreaterThan(2048);
          // The oldest windows were shortened as new ones came; the model read notes saying so, and the newest result whole.
          const last = messagesOf(tiny.requests[3]).filter((m) => m.role === 'tool').map((m) => String(m.content));
          expect(last[0]).toMatch(/^\[shortened by cadre to fit the model's context: \d+ characters of fs_read's result, of which the start is: big\.txt, lines 1-100 of 250/);
          expect(last[1]).toMatch(/^\[shortened by cadre .* lines 101-200 of 250/);
          expect(last[2]).toBe(windows[2]);
          const turns = auditLines(id).filter((l) => l.event === 'model.turn' && l.step === 'read');
          expect(turns.map((l) => l.shortened)).toEqual([undefined, undefined, 1, 2]);
          // The prompt alone is over the window: the step fails before any request is sent.
          expect(step(d, 'huge').status).toBe('skipped');
          expect(step(d, 'huge').error).toMatch(/ModelContextTooLong: .*the conversation needs about \d+ tokens with every tool result shortened, and the model's context holds 2048/);
        },
        { activityDeps: { models }, auditDir },
      );
    } finally {
      await tiny.close();
    }
  });

  test('never a silent success: a call written as text gets one correction; written so again, the step fails ToolCallNotParsed naming the fix', async () => {
    const ws = tempWorkspace();
    writeFileSync(path.join(ws, 'notes.txt'), 'three notes');
    const plan = compile(
      `
name: local-silent
steps:
  - { id: corrected, agent: { prompt: "summarise notes.txt into a.txt", model: "openai-compatible:native", tools: [fs.read, fs.write] } }
  - { id: silent, dependsOn: [corrected], agent: { prompt: "summarise notes.txt into b.txt", model: "openai-compatible:native", tools: [fs.read, fs.write] } }
`,
      ws,
    );
    const asText = { toolCalls: [{ id: 'x', name: 'fs_read', args: { path: 'notes.txt' } }], toolCallsAs: 'json-block' as const };
    server.enqueue(
      // Corrected: the model then calls the tool properly and finishes.
      asText,
      { toolCalls: [{ id: 'w', name: 'fs_write', args: { path: 'a.txt', content: 'three notes, summarised' } }] },
      { text: 'done' },
      // Never corrected: the same text twice.
      asText,
      asText,
    );
    await withAgents(async (h) => {
      const id = await startPlan(h, plan);
      const d = await h.client.result(id).catch(() => h.client.diagnostics(id));
      expect(step(d, 'corrected').status).toBe('completed');
      expect(readFileSync(path.join(ws, 'a.txt'), 'utf8')).toBe('three notes, summarised');
      expect(d.status).toBe('failed');
      expect(step(d, 'silent').status).toBe('failed');
      expect(step(d, 'silent').error).toContain('ToolCallNotParsed');
      expect(step(d, 'silent').error).toContain('set toolCalls: json for the endpoint (models.compatible.native.toolCalls in cadre.config.yaml; it is native now)');
      expect(existsSync(path.join(ws, 'b.txt'))).toBe(false);
      // Exactly one correction each: 3 requests for the first step, 2 for the second, whose second request carried it.
      expect(server.requests).toHaveLength(5);
      const corrections = server.requests.map((r) => messagesOf(r).filter((m) => m.role === 'user' && String(m.content).startsWith('Your last answer looks like a call to fs_read')).length);
      expect(corrections).toEqual([0, 1, 1, 0, 1]);
      // cadre status shows what the agent did: turns, and no tool call.
      expect(step(d, 'silent').agent).toMatchObject({ turns: 2, toolCalls: 0 });
      const status = await runCadre(['status', id], ws, testServerEnv());
      expect(status.stdout).toMatch(/silent\s+failed .*2 turns, 0 tool calls/);
    });
  });

  test('a loop stops: the same call three turns in a row is pointed out once, and the fourth fails the step AgentLoopDetected', async () => {
    const ws = tempWorkspace();
    const plan = compile(`name: local-loop\nsteps:\n  - { id: rewriter, agent: { prompt: "write a summary to s.txt", model: "openai-compatible:xml", tools: [fs.write] } }\n`, ws);
    const same = { toolCalls: [{ id: 'w', name: 'fs_write', args: { path: 's.txt', content: 'the summary' } }], toolCallsAs: 'xml' as const };
    server.enqueue(same, same, same, same, { text: 'never asked for' });
    await withAgents(async (h) => {
      const id = await startPlan(h, plan);
      const d = await h.client.result(id).catch(() => h.client.diagnostics(id));
      expect(d.status).toBe('failed');
      expect(step(d, 'rewriter').error).toContain('AgentLoopDetected: the agent called fs_write with the same arguments 4 times in a row');
      expect(step(d, 'rewriter').agent).toMatchObject({ turns: 4, toolCalls: 3 });
      expect(readFileSync(path.join(ws, 's.txt'), 'utf8')).toBe('the summary');
      expect(server.requests).toHaveLength(4);
      const notes = server.requests.map((r) => JSON.stringify(messagesOf(r)).split('times in a row').length - 1);
      expect(notes).toEqual([0, 0, 0, 1]);
    });
  });
});

describe('the local-model benchmark (bench/local-model.ts), on the fake server', () => {
  test('its tasks run as agent steps and are judged by the workspace: a task done succeeds, a task claimed over wrong work fails', async () => {
    const tasks = TASKS.filter((t) => t.id === 'edit-word' || t.id === 'config-port');
    // The tasks run in the benchmark's order: config-port, then edit-word.
    server.enqueue(
      // config-port, claimed: the model writes the wrong port and says it wrote the right one (its file is
      // written, so its plan's mustChange lets the answer through: only the check sees the work is wrong).
      { toolCalls: [{ id: 'p', name: 'fs_write', args: { path: 'port.txt', content: '8080' } }], toolCallsAs: 'bare-json', usage: { inputTokens: 400, outputTokens: 10 } },
      { text: 'I wrote 8443 to port.txt.', usage: { inputTokens: 450, outputTokens: 10 } },
      // edit-word, done: calls written as bare JSON objects, as Qwen2.5-Coder 1.5B writes them on llama.cpp.
      { toolCalls: [{ id: 'r', name: 'fs_read', args: { path: 'greeting.txt' } }], toolCallsAs: 'bare-json', usage: { inputTokens: 400, outputTokens: 20 } },
      { toolCalls: [{ id: 'w', name: 'fs_write', args: { path: 'greeting.txt', content: 'Hello, cadre!\nWelcome to the cadre of tools.\n' } }], toolCallsAs: 'bare-json', usage: { inputTokens: 450, outputTokens: 30 } },
      { text: 'Replaced World with cadre.', usage: { inputTokens: 500, outputTokens: 8 } },
    );
    const logged: string[] = [];
    const transcripts = path.join(tempWorkspace(), 'transcripts');
    const results = await withAgents((h) => runTasks(h, { model: 'openai-compatible:json', tasks, maxTurns: 6, timeout: '2m', root: tempWorkspace(), transcripts, log: (line) => logged.push(line) }));
    expect(results.map(({ seconds: _seconds, load: _load, ...rest }) => rest)).toEqual([
      { task: 'config-port', success: false, check: 'port.txt holds "8080"', ended: 'completed', answer: 'I wrote 8443 to port.txt.', turns: 2, toolCalls: 1, unparsed: 0, inputTokens: 850, outputTokens: 20 },
      { task: 'edit-word', success: true, check: 'greeting.txt is right', ended: 'completed', answer: 'Replaced World with cadre.', turns: 3, toolCalls: 2, unparsed: 0, inputTokens: 1350, outputTokens: 58 },
    ]);
    expect(table(results).split('\n').at(-1)).toMatch(/^\| \*\*total\*\* \| \*\*1\/2\*\* \| {2}\| 5 \| 3 \| 2278 \| \d+ \|$/);
    // The claim over wrong work is counted as what it is: a silent success.
    expect(summary(results)).toMatch(/^cadre: 1\/2 done, 1 silent successes \(completed, work undone\), 0 replies that did not parse, median task [\d.]+ s$/);
    expect(logged).toContain('config-port: started');
    // Each task's transcript: the model's calls and what the tools answered, then the check.
    const edit = readFileSync(path.join(transcripts, 'edit-word.txt'), 'utf8');
    expect(edit).toContain('call fs_read {"path":"greeting.txt"}');
    expect(edit).toContain('--- fs.read: greeting.txt, lines 1-2 of 2:\n1\tHello, World!');
    expect(edit.trim().split('\n').at(-1)).toBe('--- check: success (greeting.txt is right)');
  });
});

describe('decide steps', () => {
  test('the output is exactly one of the choices; another answer gets one more turn', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: decide
steps:
  - { id: triage, decide: { prompt: "Is this email urgent? {{ inputs.email }}", choices: [urgent, routine], model: "openai:gpt-4o-mini" } }
  - { id: page, dependsOn: [triage], when: "steps.triage.output == 'urgent'", tool: shell, with: { command: "echo paged" } }
inputs: { email: { type: string } }
`,
      ws,
    );
    server.enqueue({ text: 'It seems rather pressing.' }, { text: 'Urgent.' });
    await withAgents(async (h) => {
      const id = await startPlan(h, plan, { email: 'the site is down' });
      const d = await h.client.result(id);
      expect(step(d, 'triage').status).toBe('completed');
      expect(step(d, 'page').status).toBe('completed');
      expect(JSON.stringify(server.requests[0].body.messages)).toContain('Is this email urgent? the site is down');
      expect(JSON.stringify(server.requests[1].body.messages)).toContain('Answer with exactly one of: urgent, routine');
    });
  });
});

describe('approvals', () => {
  test('ask waits for a person: the run shows the call and is listed as waiting; a denial reaches the model with its reason, an approval runs the tool', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: approvals
steps:
  - id: deploy
    agent:
      prompt: deploy it
      model: openai:gpt-4o-mini
      tools: [shell]
      approvals: { shell: { "rm *": deny, "echo *": ask } }
`,
      ws,
    );
    server.enqueue(
      { toolCalls: [{ id: 'first', name: 'shell', args: { command: 'echo first > first.txt' } }] },
      { toolCalls: [{ id: 'second', name: 'shell', args: { command: 'echo second > second.txt' } }, { id: 'wipe', name: 'shell', args: { command: 'rm -rf /tmp/x' } }] },
      { text: 'deployed' },
    );
    await withAgents(async (h) => {
      const id = await startPlan(h, plan);
      const waitFor = (callId: string) => waitUntil(h, id, (d: Diagnostics) => d.waiting.some((w) => w.id === `deploy/call-${callId}`));
      let d = await waitFor('1.1');
      expect(d.status).toBe('waiting');
      expect(step(d, 'deploy').status).toBe('waiting');
      expect(d.waiting[0]).toMatchObject({ kind: 'approval', choices: ['approve', 'always', 'deny'] });
      expect(d.waiting[0].prompt).toBe('Allow shell: echo first > first.txt? approve, always (this exact call from now on), or deny[:reason]');
      // The whole call, as the rules read it, for the person who decides.
      expect(d.waiting[0].detail).toEqual({
        tool: 'shell',
        args: '{"command":"echo first > first.txt"}',
        command: 'echo first > first.txt',
        reason: '`echo first` needs a person: the rule echo: ask',
        segments: [
          { text: 'echo first', decision: 'ask', rule: 'echo: ask' },
          // A redirection that writes a file is judged too: as what no rule names (otherwise, ask by default).
          { text: 'echo first > first.txt', decision: 'ask', rule: 'writes first.txt' },
        ],
      });
      const listed = await waitUntilListed(h, id);
      expect(listed).toContain(id);
      await expect(h.client.answer(id, 'deploy/call-1.1', 'maybe')).rejects.toThrow('"maybe" is not one of: approve, always, deny');
      await h.client.answer(id, 'deploy/call-1.1', 'deny:not on a Friday');
      await expect(h.client.answer(id, 'deploy/call-1.1', 'approve')).rejects.toThrow('already answered');
      d = await waitFor('2.1');
      await h.client.answer(id, 'deploy/call-2.1', 'approve');
      d = await h.client.result(id);
      expect(d.status).toBe('completed');
      expect(existsSync(path.join(ws, 'first.txt'))).toBe(false);
      expect(readFileSync(path.join(ws, 'second.txt'), 'utf8')).toBe('second\n');
      expect(toolResults(server.requests[1]).first).toContain('denied by a person: not on a Friday');
      expect(toolResults(server.requests[2]).wipe).toContain('denied: `rm -rf /tmp/x` is denied: the rule rm: deny');
      const approvals = auditLines(id).filter((l) => String(l.event).startsWith('approval.')).map((l) => `${String(l.event)} ${String(l.call)} ${String(l.outcome ?? '')}`.trim());
      expect(approvals.sort()).toEqual(['approval.asked 1.1', 'approval.asked 2.1', 'approval.decided 1.1 denied', 'approval.decided 2.1 approved', 'approval.decided 2.2 denied_by_policy']);
      expect(readFileSync(auditFile(auditDir, id), 'utf8')).not.toContain('Friday');
    });
  });

  test('from the CLI: status shows the waiting call with the commands; deny --reason, approve, audit', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: approvals-cli
steps:
  - { id: ship, agent: { prompt: ship it, model: "openai:gpt-4o-mini", tools: [fs.write], approvals: { fs.write: ask } } }
`,
      ws,
    );
    server.enqueue(
      { toolCalls: [{ id: 'one', name: 'fs_write', args: { path: 'one.txt', content: '1' } }] },
      { toolCalls: [{ id: 'two', name: 'fs_write', args: { path: 'two.txt', content: '2' } }] },
      { text: 'shipped' },
    );
    const env = { ...testServerEnv(), CADRE_AUDIT_DIR: auditDir };
    await withAgents(async (h) => {
      const id = await startPlan(h, plan);
      await waitUntil(h, id, (d) => d.waiting.length === 1);
      const status = await runCadre(['status', id], ws, env);
      expect(status.stdout).toContain('? ship/call-1.1: Allow fs.write? approve, always (this exact call from now on), or deny[:reason] [approve/always/deny]');
      expect(status.stdout).toContain('    arguments: {"path":"one.txt","content":"1"}');
      expect(status.stdout).toContain(`cadre approve ${id} ship/call-1.1`);
      expect(status.stdout).toMatch(/ship\s+waiting .*1 turn, 1 tool calls, 0 tokens/);
      expect(await runCadre(['deny', id, 'ship/call-1.1', '--reason', 'use two.txt'], ws, env)).toMatchObject({ code: 0, stdout: 'denied ship/call-1.1\n' });
      await waitUntil(h, id, (d) => d.waiting.some((w) => w.id === 'ship/call-2.1'));
      expect(await runCadre(['approve', id, 'ship/call-2.1'], ws, env)).toMatchObject({ code: 0, stdout: 'approved ship/call-2.1\n' });
      expect((await h.client.result(id)).status).toBe('completed');
      expect(toolResults(server.requests[1]).one).toContain('denied by a person: use two.txt');
      expect(readFileSync(path.join(ws, 'two.txt'), 'utf8')).toBe('2');
      const audit = await runCadre(['audit', id], ws, env);
      expect(audit.code).toBe(0);
      const events = audit.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { event: string }).event);
      expect(events.filter((e) => e === 'tool.started')).toHaveLength(1);
      expect(events.filter((e) => e === 'approval.decided')).toHaveLength(2);
      const missing = await runCadre(['audit', 'no-such-run'], ws, env);
      expect(missing.code).not.toBe(0);
      expect(missing.stderr).toContain('no audit log for no-such-run');
    });
  });

  test('an approval nobody gives within approvalTimeout is a denial', async () => {
    const ws = tempWorkspace();
    const plan = compile(
      `
name: approval-timeout
steps:
  - { id: a, agent: { prompt: go, model: "openai:gpt-4o-mini", tools: [fs.write], approvals: { fs.write: ask }, approvalTimeout: 1s } }
`,
      ws,
    );
    server.enqueue({ toolCalls: [{ id: 'w', name: 'fs_write', args: { path: 'x.txt', content: 'x' } }] }, { text: 'gave up' });
    await withAgents(async (h) => {
      const id = await startPlan(h, plan);
      const d = await h.client.result(id);
      expect(d.output).toBeUndefined();
      expect(existsSync(path.join(ws, 'x.txt'))).toBe(false);
      expect(toolResults(server.requests[1]).w).toContain('denied: nobody approved fs.write within 1s');
    });
  });
});

async function waitUntilListed(h: Harness, id: string): Promise<string[]> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const ids = (await h.client.list({ status: 'waiting', limit: 100 })).map((r) => r.workflowId);
    if (ids.includes(id) || Date.now() > deadline) return ids;
    await new Promise((r) => setTimeout(r, 300));
  }
}
