/**
 * The agent loop's guards as pure functions: an answer that is a tool call written as text
 * (providers/unparsed-tool-call.ts), and the correction, loop note and failures the workflow
 * sends or throws (protocol/agent-guards.ts).
 */
import { ApplicationFailure } from '@temporalio/common';
import { TurnGuards, canonical } from '../../src/protocol/agent-guards';
import { findUnparsedToolCall } from '../../src/providers/unparsed-tool-call';
import { TEXT_TOOL_CALL_STYLES, writeCall } from '../support/fake-model-server';

const TOOLS = ['fs_read', 'fs_write', 'shell'];

describe('findUnparsedToolCall', () => {
  test.each([
    ['the issue\'s answer: a ```json block', 'I will read it.\n```json\n{"name": "fs_read", "arguments": {"path": "notes.txt"}}\n```', 'fs_read', 'json'],
    ['a bare object as the whole answer', '{"name": "fs_write", "arguments": {"path": "a", "content": "b"}}', 'fs_write', 'json'],
    ['an object among words, loosely written', "Sure! {'name': 'shell', 'parameters': {'command': 'ls',},} should do it", 'shell', 'json'],
    ['<tool_call> tags', '<tool_call>\n{"name": "fs_read", "arguments": {"path": "x"}}\n</tool_call>', 'fs_read', 'json'],
    ['<tool_call> tags never closed', '<tool_call>{"name": "fs_read", "arguments": {"path": "x"}', 'fs_read', 'json'],
    ["OpenAI's shape", '[{"type": "function", "function": {"name": "shell", "arguments": "{\\"command\\": \\"ls\\"}"}}]', 'shell', 'json'],
    ['a tool_calls list', '{"tool_calls": [{"name": "fs_read", "args": {"path": "x"}}]}', 'fs_read', 'json'],
    ['a tag named for the tool', 'Reading:\n<fs_read>\n  <path>notes.txt</path>\n</fs_read>', 'fs_read', 'xml'],
    ['a tag cut short', '<fs_write><path>a.txt</path><content>half', 'fs_write', 'xml'],
    ['an invoke tag', '<invoke name="shell"><parameter name="command">ls</parameter></invoke>', 'shell', 'xml'],
    ['Qwen3-Coder', '<tool_call>\n<function=fs_read>\n<parameter=path>\nnotes.txt\n</parameter>\n</function>\n</tool_call>', 'fs_read', 'qwen'],
  ])('%s', (_, text, tool, style) => {
    expect(findUnparsedToolCall(text, TOOLS)).toEqual({ tool, style });
  });

  test('each style the fake model server writes is found, as the style cadre reads it in', () => {
    const expected = { 'json-block': 'json', 'tool-call-tags': 'json', 'bare-json': 'json', xml: 'xml', qwen: 'qwen' };
    for (const style of TEXT_TOOL_CALL_STYLES) {
      const text = `Let me do that.\n${writeCall('fs_write', { path: 'summary.txt', content: 'a <b> & "c"\nd' }, style)}`;
      expect({ style, found: findUnparsedToolCall(text, TOOLS) }).toEqual({ style, found: { tool: 'fs_write', style: expected[style] } });
    }
  });

  test.each([
    ['plain words', 'I read notes.txt and wrote the summary to summary.txt.'],
    ['words that name a tool', 'I used fs_read and then fs_write; shell was not needed.'],
    ['a JSON answer naming no tool', '{"summary": "all good", "files": ["a.txt"]}'],
    ['a tool named without arguments (a record, not a call)', '{"name": "fs_read", "description": "reads files"}'],
    ['a code sample', 'Use this:\n```ts\nconst x = { name: "fs_read" };\n```'],
    ['a call to a tool not offered', '```json\n{"name": "rm_rf", "arguments": {"path": "/"}}\n```'],
    ['tags of other names', '<p>Hello</p> <br/> <fs_reader>no</fs_reader>'],
    ['broken JSON', '{"name": "fs_read", "arguments": {"path": '],
    ['nothing', '   '],
  ])('not a call: %s', (_, text) => {
    expect(findUnparsedToolCall(text, TOOLS)).toBeUndefined();
  });

  test('with no tools offered, nothing is a call', () => {
    expect(findUnparsedToolCall('{"name": "fs_read", "arguments": {}}', [])).toBeUndefined();
  });

  test('a long answer is read in bounded time', () => {
    const text = `${'{"a": 1} '.repeat(20_000)}${'['.repeat(50_000)}<fs_read><path>x</path></fs_read>`;
    expect(findUnparsedToolCall(text, TOOLS)).toEqual({ tool: 'fs_read', style: 'xml' });
  });
});

function failureOf(fn: () => unknown): ApplicationFailure {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApplicationFailure);
    return err as ApplicationFailure;
  }
  throw new Error('expected a failure');
}

describe('TurnGuards', () => {
  const unparsed = { unparsedToolCall: { tool: 'fs_read', style: 'json' as const, fix: 'set toolCalls: json for the endpoint (models.compatible.local.toolCalls)' } };

  test('an unparsed call is corrected once, then fails with ToolCallNotParsed naming the fix', () => {
    const guards = new TurnGuards();
    expect(guards.answer({})).toBeUndefined();
    expect(guards.answer(unparsed)).toMatch(/^Your last answer looks like a call to fs_read written as text\. It was not run/);
    const failure = failureOf(() => guards.answer(unparsed));
    expect(failure.type).toBe('ToolCallNotParsed');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('set toolCalls: json for the endpoint (models.compatible.local.toolCalls)');
  });

  test('a mustChange answer before its change is corrected once, naming the files still to change, then fails with AgentMadeNoChange quoting the answer', () => {
    const guards = new TurnGuards();
    expect(guards.answer({ text: 'done' })).toBeUndefined();
    expect(guards.answer({ notChanged: [], text: 'The folder holds 7 files.' })).toBe(
      'Not finished: this task is done only when the workspace has changed, and nothing has changed yet (no file written or edited, no command run). Make the change it asks for with your tools, then give your final answer.',
    );
    const failure = failureOf(() => guards.answer({ notChanged: ['total.txt', 'a.txt'], text: 'The contents are not available.' }));
    expect(failure.type).toBe('AgentMadeNoChange');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toBe(
      'the agent answered after being told the task is not done, and total.txt and a.txt have not been written or changed yet; the step\'s task is a change (mustChange): its answer was "The contents are not available."',
    );
    expect(new TurnGuards().answer({ notChanged: ['total.txt'] })).toMatch(/and total\.txt has not been written or changed yet\. Make total\.txt with your tools/);
  });

  test('the same calls three turns in a row get a note; a fourth fails with AgentLoopDetected', () => {
    const guards = new TurnGuards();
    const write = [{ name: 'fs_write', args: { path: 'a.txt', content: 'x' } }];
    expect(guards.calls(write)).toBeUndefined();
    expect(guards.calls([{ name: 'fs_write', args: { content: 'x', path: 'a.txt' } }])).toBeUndefined(); // the same arguments, keys in another order
    expect(guards.calls(write)).toMatch(/^You have now called fs_write with the same arguments 3 times in a row/);
    const failure = failureOf(() => guards.calls(write));
    expect(failure.type).toBe('AgentLoopDetected');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toBe('the agent called fs_write with the same arguments 4 times in a row, after being told it was repeating itself');
  });

  test('another call, other arguments or an answer between repeats starts the count again', () => {
    const guards = new TurnGuards();
    const read = [{ name: 'fs_read', args: { path: 'a' } }];
    for (let i = 0; i < 5; i++) {
      expect(guards.calls(read)).toBeUndefined();
      expect(guards.calls(read)).toBeUndefined();
      if (i % 2 === 0) expect(guards.calls([{ name: 'fs_read', args: { path: 'b' } }])).toBeUndefined();
      else expect(guards.answer({})).toBeUndefined();
    }
    // Two calls in a turn are one repeat when both repeat.
    const pair = [...read, { name: 'shell', args: { command: 'ls' } }];
    guards.calls(pair);
    guards.calls(pair);
    expect(guards.calls(pair)).toContain('the same 2 tool calls 3 times in a row');
  });

  test('canonical JSON sorts keys at every depth and keeps arrays in order', () => {
    expect(canonical({ b: [2, { d: 1, c: null }], a: 'x', u: undefined })).toBe('{"a":"x","b":[2,{"c":null,"d":1}]}');
  });
});
