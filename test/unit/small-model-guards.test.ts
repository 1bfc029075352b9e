/**
 * The guards of `toolCalls: required` that keep a small model moving: a repeated call sent back
 * unrun, a file read again with nothing changed since; and the fit of a conversation to a small
 * context window, oldest tool results shortened first.
 */
import { type FitMessage, fitToWindow, outputReserve } from '../../src/providers/context-window';
import type { ModelMessageInput } from '../../src/providers/model-turn';
import { type Call as ToolCall, finishTooSoon, notChanged, repeated } from '../../src/providers/required-guards';
import type { MustChange } from '../../src/protocol/made-no-change';
import { requiredTurn } from '../../src/providers/required-turn';

const call = (name: string, args: Record<string, unknown>, error?: string): ToolCall => ({ id: `${name}-${JSON.stringify(args)}`, name, args, ...(error && { error }) });
/** What a call threw. */
function failureOf(run: () => unknown): { type?: string; nonRetryable?: boolean; message?: string } {
  try {
    run();
  } catch (err) {
    return err as { type?: string; nonRetryable?: boolean; message?: string };
  }
  throw new Error('it did not throw');
}
const turn = (...calls: ToolCall[]): ModelMessageInput => ({ role: 'assistant', toolCalls: calls });

describe('repeated calls', () => {
  test('a file read again with nothing changed since is sent back; after a write or a command it runs', () => {
    const read = call('fs_read', { path: 'notes.txt' });
    expect(repeated(read, [])).toBeUndefined();
    expect(repeated(call('fs_read', { path: 'notes.txt', from: 1, to: 1 }), [turn(read)])).toMatch(/^not run: notes\.txt as you read it is above, the same as it is now\. Go on/);
    expect(repeated(read, [turn(read), turn(call('fs_write', { path: 'notes.txt', content: 'x' }))])).toBeUndefined();
    expect(repeated(read, [turn(read), turn(call('shell', { command: 'sed -i s/a/b/ notes.txt' }))])).toBeUndefined();
    expect(repeated(call('fs_read', { path: 'other.txt' }), [turn(read)])).toBeUndefined();
    // Lines not read before are new: the next window of a long file runs; a window inside one read does not.
    expect(repeated(call('fs_read', { path: 'notes.txt', from: 101 }), [turn(read)])).toBeUndefined();
    expect(repeated(call('fs_read', { path: 'notes.txt', from: 50, to: 120 }), [turn(read)])).toBeUndefined();
    expect(repeated(call('fs_read', { path: 'notes.txt', from: 20, to: 40 }), [turn(read)])).toMatch(/^not run: notes\.txt as you read it is above/);
    // The task is quoted back: a small model that reads again has lost it.
    expect(repeated(read, [{ role: 'user', content: 'Sum the notes.' }, turn(read)])).toBe('not run: notes.txt as you read it is above, the same as it is now. The task was: "Sum the notes." Go on with its next step using what you read.');
    // A read that was itself refused, or that failed, does not count as read.
    expect(repeated(read, [turn(call('fs_read', { path: 'notes.txt' }, 'not run: ...'))])).toBeUndefined();
    const failed: ModelMessageInput = { role: 'tool', toolCallId: read.id, toolName: 'fs_read', result: 'no file "notes.txt"', isError: true };
    expect(repeated(read, [turn(read), failed])).toBeUndefined();
  });

  test('any call the same as the one before it (arguments in any order) is sent back', () => {
    const run = call('shell', { command: 'node test.js', cwd: '.' });
    expect(repeated(call('shell', { cwd: '.', command: 'node test.js' }), [turn(run)])).toMatch(/^not run: this is the same shell call as your last one/);
    expect(repeated(run, [turn(run), turn(call('fs_edit', { path: 'a.js', old_text: 'a', new_text: 'b' }))])).toBeUndefined();
  });
});

describe('a finish too soon', () => {
  const tools = ['fs_read', 'fs_write'];
  const read = call('fs_read', { path: 'config.ini' });
  const readResult: ModelMessageInput = { role: 'tool', toolCallId: read.id, toolName: 'fs_read', result: 'port = 8443' };

  test('before any tool ran, or before a change when tools that change were offered: twice, quoting the task', () => {
    expect(finishTooSoon([], tools)).toMatch(/^not finished: you have not called any tool yet/);
    const failedRead: ModelMessageInput = { role: 'tool', toolCallId: read.id, toolName: 'fs_read', result: 'data is a folder', isError: true };
    expect(finishTooSoon([turn(read), failedRead], tools)).toMatch(/^not finished: none of your tool calls has worked yet, so nothing has been done/);
    expect(finishTooSoon([turn(read), readResult], tools)).toMatch(/^not finished: you have only read so far\. If it asks .* now \(fs_write\), then call finish\.$/);
    const task: ModelMessageInput = { role: 'user', content: ' Write the port to port.txt. ' };
    expect(finishTooSoon([task, turn(read), readResult], tools)).toMatch(/so far\. The task was: "Write the port to port\.txt\." If it asks/);
    expect(finishTooSoon([{ role: 'user', content: 'x'.repeat(500) }], tools)).toContain(`"${'x'.repeat(400)}…"`);
    // Told twice: the next finish is taken.
    const told = turn(call('finish', { answer: '8443' }, 'not finished: ...'));
    expect(finishTooSoon([turn(read), readResult, told], tools)).toMatch(/^not finished/);
    expect(finishTooSoon([turn(read), readResult, told, told], tools)).toBeUndefined();
    // No tool that changes anything offered: no word.
    const write = call('fs_write', { path: 'port.txt', content: '8443' });
    expect(finishTooSoon([turn(read), readResult], ['fs_read'])).toBeUndefined();
    expect(finishTooSoon([], [])).toBeUndefined();
    // A change that failed is no change.
    const failedWrite: ModelMessageInput = { role: 'tool', toolCallId: write.id, toolName: 'fs_write', result: 'SyntaxBroken', isError: true };
    expect(finishTooSoon([turn(read), readResult, turn(write), failedWrite], tools)).toMatch(/only read so far/);
  });

  test('a step whose task is a change (mustChange: true) never takes a finish before one: sent back twice, then AgentMadeNoChange with the answer', () => {
    const context = (messages: ModelMessageInput[], mustChange?: MustChange) => ({ label: 'openai-compatible:tiny', mustChange: mustChange ?? true, request: { messages, tools: tools.map((name) => ({ name })) } });
    const finish = call('finish', { answer: 'The contents are not available.' });
    const reply = { text: '', finishReason: 'tool-calls', usage: { inputTokens: 1, outputTokens: 1 } };
    const first = requiredTurn([finish], reply, context([turn(read), readResult]));
    expect(first.toolCalls[0].error).toMatch(/^not finished: this task is done only when the workspace has changed, and nothing has changed yet \(no file written or edited, no command run\)\. Write or edit/);
    const told = turn(call('finish', { answer: '7' }, 'not finished: ...'));
    expect(requiredTurn([finish], reply, context([turn(read), readResult, told])).toolCalls[0].error).toMatch(/^not finished: this task is done only when/);
    expect(failureOf(() => requiredTurn([finish], reply, context([turn(read), readResult, told, told])))).toMatchObject({
      type: 'AgentMadeNoChange',
      nonRetryable: true,
      message: expect.stringContaining('nothing has changed yet (no file written or edited, no command run); the step\'s task is a change (mustChange): its answer was "The contents are not available."'),
    });
    // Without mustChange the third finish is taken; with a change that worked, the finish goes to the review as before.
    expect(requiredTurn([finish], reply, { ...context([turn(read), readResult, told, told]), mustChange: undefined }).text).toBe('The contents are not available.');
    const write = call('fs_write', { path: 'count.txt', content: '7' });
    expect(requiredTurn([finish], reply, context([turn(read), readResult, turn(write), told])).toolCalls[0].error).toMatch(/^not finished: check your work/);
  });

  test('mustChange naming files: each must be written or edited (any spelling of its path), or named by a command that worked', () => {
    const worked = (c: ToolCall): ModelMessageInput[] => [turn(c), { role: 'tool', toolCallId: c.id, toolName: c.name, result: 'ok' }];
    const files = ['total.txt', 'src/main.js'];
    expect(notChanged([], files)).toEqual(files);
    expect(notChanged(worked(call('fs_edit', { path: 'order.txt', old_text: 'a', new_text: 'b' })), files)).toEqual(files);
    expect(notChanged(worked(call('fs_write', { path: './total.txt', content: '20' })), files)).toEqual(['src/main.js']);
    expect(notChanged([...worked(call('fs_write', { path: './total.txt', content: '20' })), ...worked(call('fs_edit', { path: 'src//main.js', old_text: 'a', new_text: 'b' }))], files)).toBeUndefined();
    expect(notChanged(worked(call('shell', { command: 'node stamp.js > total.txt' })), ['total.txt'])).toBeUndefined();
    // A write that failed, or was sent back unrun, is no change.
    const failed = call('fs_write', { path: 'total.txt', content: 'x' });
    expect(notChanged([turn(failed), { role: 'tool', toolCallId: failed.id, isError: true }], ['total.txt'])).toEqual(['total.txt']);
    expect(notChanged([turn(call('fs_write', { path: 'total.txt', content: 'x' }, 'not run: ...'))], ['total.txt'])).toEqual(['total.txt']);
    expect(notChanged(worked(call('fs_read', { path: 'total.txt' })), true)).toEqual([]);
    // The finish after the wrong file's edit is sent back naming the file still to write (Qwen2.5-Coder 1.5B edited order.txt for total.txt).
    const task: ModelMessageInput = { role: 'user', content: 'Write the total to total.txt.' };
    expect(finishTooSoon([task, ...worked(call('fs_edit', { path: 'order.txt', old_text: 'a', new_text: 'b' }))], ['fs_read', 'fs_write', 'fs_edit'], ['total.txt'])).toBe(
      'not finished: this task is done only when the workspace has changed, and total.txt has not been written or changed yet. The task was: "Write the total to total.txt." Write or change total.txt (fs_write, fs_edit), then call finish.',
    );
  });

  test('the first finish after a change is sent back once, with what changed beside the task; the next is taken', () => {
    const tools = ['fs_read', 'fs_write', 'fs_edit', 'shell'];
    const task: ModelMessageInput = { role: 'user', content: 'Rename calc to total in util.js and main.js.' };
    const edit = call('fs_edit', { path: 'util.js', old_text: 'calc', new_text: 'total' });
    const run = call('shell', { command: `node main.js ${'x'.repeat(100)}` });
    const reviewed = finishTooSoon([task, turn(edit), turn(edit), turn(run)], tools);
    expect(reviewed).toBe(
      `not finished: check your work against the task first. What you changed: edited util.js; ran "node main.js ${'x'.repeat(67)}…". ` +
        'The task was: "Rename calc to total in util.js and main.js." If any part of it is not done yet (a file not written or changed, a command not run), do that now; if all of it is done, call finish again with your answer.',
    );
    expect(finishTooSoon([task, turn(edit), turn(call('finish', { answer: 'done' }, reviewed)), turn(edit)], tools)).toBeUndefined();
    // A finish refused as too soon before the change does not stand for the review.
    const early = turn(call('finish', { answer: 'done' }, 'not finished: you have not called any tool yet, so nothing has been done.'));
    expect(finishTooSoon([task, early, turn(edit)], tools)).toMatch(/^not finished: check your work against the task first\. What you changed: edited util\.js\./);
  });
});

describe('fitting a conversation to the context window', () => {
  const result = (n: number) => `${'word '.repeat(300)}#${n}`;
  const messages = (n: number): FitMessage[] => [
    { role: 'user', content: 'task' },
    ...Array.from({ length: n }, (_, i) => [
      { role: 'assistant', toolCalls: [{ id: `c${i}` }] },
      { role: 'tool', toolName: 'fs_read', toolCallId: `c${i}`, result: result(i) },
    ]).flat(),
  ];

  test('what fits goes whole; otherwise the oldest tool results are shortened first, each saying so', () => {
    expect(fitToWindow({ messages: messages(2) }, 4096, 512, 'm')).toEqual({ messages: messages(2) });
    const fit = fitToWindow({ messages: messages(6) }, 2048, 512, 'm');
    const results = fit.messages.filter((m) => m.role === 'tool').map((m) => String(m.result));
    const cut = results.filter((r) => r.startsWith('[shortened by cadre'));
    expect(fit.shortened?.toolResults).toBe(cut.length);
    expect(cut.length).toBeGreaterThan(0);
    // Shortened from the oldest on: every shortened result comes before every whole one.
    expect(results.slice(0, cut.length)).toEqual(cut);
    expect(results.at(-1)).toBe(result(5));
    expect(cut[0]).toMatch(/^\[shortened by cadre to fit the model's context: 1502 characters of fs_read's result, of which the start is: word word/);
    expect(cut[0]).toMatch(/Call fs_read again if you need the rest\.$/);
  });

  test('a conversation that cannot fit even shortened fails ModelContextTooLong, not retried; the answer keeps its share', () => {
    expect(() => fitToWindow({ system: 'x'.repeat(9000), messages: messages(1) }, 2048, 512, 'openai-compatible:tiny')).toThrow(
      /^openai-compatible:tiny: the conversation needs about \d+ tokens with every tool result shortened, and the model's context holds 2048 \(512 kept for the answer\)/,
    );
    expect(outputReserve(2048, undefined)).toBe(512);
    expect(outputReserve(16384, undefined)).toBe(2048);
    expect(outputReserve(16384, 300)).toBe(300);
  });
});
