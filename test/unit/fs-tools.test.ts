/**
 * The file tools as a small model uses them: fs.read's window of numbered lines, fs.edit's exact and
 * unique replacement (errors that show where to look), and the syntax check before fs.write or
 * fs.edit changes a JSON, JavaScript, TypeScript or Python file. A plan's fs.read keeps its whole-file
 * result.
 */
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultToolSandbox, INLINE_OUTPUT_LIMITS } from '../../src/activities/tools/context';
import { runTool } from '../../src/activities/tools/run-tool';
import { syntaxProblem } from '../../src/activities/tools/syntax';
import { applicationFailure } from '../support/failures';

const ctx = (workspace: string, forModel: boolean) => ({ workspace, stepId: 's', attempt: 1, signal: new AbortController().signal, limits: INLINE_OUTPUT_LIMITS, sandbox: defaultToolSandbox(), ...(forModel && { forModel }) });
/** A tool as an agent's model calls it (text results), and as a plan's step does. */
const model = (ws: string, name: string, params: Record<string, unknown>) => runTool(name, params, ctx(ws, true));
const plan = (ws: string, name: string, params: Record<string, unknown>) => runTool(name, params, ctx(ws, false));

function workspace(files: Record<string, string>): string {
  const ws = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'cadre-fs-tools-')));
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(ws, name), text);
  return ws;
}

const LONG = Array.from({ length: 250 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';

describe('fs.read', () => {
  test("a plan's read is the file byte for byte up to fs.read's limit, and a file past it is refused for its size", async () => {
    const limit = INLINE_OUTPUT_LIMITS.readBytes;
    // Multi-byte characters across the whole file: the text is decoded once, from all its bytes.
    const atLimit = 'é'.repeat(limit / 2);
    const ws = workspace({ 'at-limit.txt': atLimit, 'past-limit.txt': `${atLimit}x`, 'empty.txt': '' });
    expect(((await plan(ws, 'fs.read', { path: 'at-limit.txt' })) as { content: string }).content).toBe(atLimit);
    expect(await plan(ws, 'fs.read', { path: 'empty.txt' })).toEqual({ path: 'empty.txt', content: '' });
    await expect(plan(ws, 'fs.read', { path: 'past-limit.txt' })).rejects.toMatchObject({ type: 'TooLarge', message: `"past-limit.txt" has ${limit + 1} bytes; fs.read returns at most ${limit} (read big files in a shell step)` });
  });

  test('a model reads 100 numbered lines at a time, told where it is and how to read on', async () => {
    const ws = workspace({ 'long.txt': LONG, 'short.txt': 'Hello, World!\nbye\n', 'empty.txt': '' });
    const first = (await model(ws, 'fs.read', { path: 'long.txt' })) as string;
    expect(first.split('\n').slice(0, 3)).toEqual(['long.txt, lines 1-100 of 250:', '  1\tline 1', '  2\tline 2']);
    expect(first.split('\n').at(-1)).toBe('(lines 101-250 not shown: read them with from: 101)');
    const last = (await model(ws, 'fs.read', { path: 'long.txt', from: 201 })) as string;
    expect(last.split('\n').slice(0, 2)).toEqual(['long.txt, lines 201-250 of 250:', '201\tline 201']);
    expect(last).not.toContain('not shown');
    expect(await model(ws, 'fs.read', { path: 'long.txt', from: 10, to: 11 })).toBe('long.txt, lines 10-11 of 250:\n10\tline 10\n11\tline 11\n(lines 12-250 not shown: read them with from: 12)');
    expect(await model(ws, 'fs.read', { path: 'short.txt' })).toBe('short.txt, lines 1-2 of 2:\n1\tHello, World!\n2\tbye');
    expect(await model(ws, 'fs.read', { path: 'empty.txt' })).toBe('empty.txt is empty.');
    await expect(model(ws, 'fs.read', { path: 'long.txt', from: 20, to: 10 })).rejects.toMatchObject({ type: 'BadToolInput', message: expect.stringContaining('to: must not be before from') });
  });

  test('a model that reads a folder is shown what it holds; a plan is told it is not a file', async () => {
    const ws = workspace({ 'top.txt': 'x' });
    mkdirSync(path.join(ws, 'data', 'deeper'), { recursive: true });
    for (const name of ['b.txt', 'a.txt', 'c.md']) writeFileSync(path.join(ws, 'data', name), name);
    expect(await model(ws, 'fs.read', { path: 'data/' })).toBe('data is a folder; it holds 4 entries:\na.txt\nb.txt\nc.md\ndeeper/');
    const refused = await applicationFailure(model(ws, 'fs.edit', { path: 'data', old_text: 'a', new_text: 'b' }));
    expect(refused).toMatchObject({ type: 'BadToolInput', nonRetryable: true });
    expect(refused.message).toBe('data is a folder, not a file; it holds 4 entries:\na.txt\nb.txt\nc.md\ndeeper/\nName one of its files by its path (data/<name>).');
    await expect(plan(ws, 'fs.read', { path: 'data' })).rejects.toMatchObject({ type: 'BadToolInput', message: 'path "data" is not a regular file' });
    // A file that is not there: the folder missing on the way, and the nearest folder that is, listed.
    const missing = await applicationFailure(model(ws, 'fs.edit', { path: 'data/deeper/nope/x.js', old_text: 'a', new_text: 'b' }));
    expect(missing).toMatchObject({
      type: 'FileNotFound',
      message: 'no file "data/deeper/nope/x.js" in the workspace: there is no folder "data/deeper/nope"; the folder data/deeper holds nothing',
    });
    const top = await applicationFailure(model(ws, 'fs.read', { path: 'node_modules/math.js' }));
    expect(top.message).toMatch(/; the workspace holds 2 entries:\ndata\/\ntop\.txt$/);
    // A file of the name asked for in the nearest folder is offered.
    const meant = await applicationFailure(model(ws, 'fs.edit', { path: 'node_modules/top/src/top.txt', old_text: 'x', new_text: 'y' }));
    expect(meant.message).toBe('no file "node_modules/top/src/top.txt" in the workspace: there is no folder "node_modules". Did you mean "top.txt"? The workspace holds 2 entries:\ndata/\ntop.txt');
    // A protected folder is refused as before, never listed.
    mkdirSync(path.join(ws, '.git'));
    await expect(model(ws, 'fs.read', { path: '.git' })).rejects.toMatchObject({ type: 'OutsideWorkspace' });
  });

  test('a plan gets the whole file and its JSON as before, or the lines it asks for', async () => {
    const ws = workspace({ 'long.txt': LONG, 'data.json': '{"a": 1}' });
    expect(await plan(ws, 'fs.read', { path: 'long.txt' })).toEqual({ path: 'long.txt', content: LONG });
    expect(await plan(ws, 'fs.read', { path: 'data.json' })).toEqual({ path: 'data.json', content: '{"a": 1}', json: { a: 1 } });
    expect(await plan(ws, 'fs.read', { path: 'long.txt', from: 249 })).toEqual({ path: 'long.txt', content: 'line 249\nline 250\n', from: 249, to: 250, lines: 250 });
  });
});

describe('fs.edit', () => {
  const GREETING = 'Hello, World!\nWelcome to the World of tools.\nbye\n';

  test('replaces text found once, and shows the lines around the change', async () => {
    const ws = workspace({ 'greeting.txt': GREETING });
    const result = await model(ws, 'fs.edit', { path: 'greeting.txt', old_text: 'Hello, World!', new_text: 'Hello, cadre!' });
    expect(readFileSync(path.join(ws, 'greeting.txt'), 'utf8')).toBe('Hello, cadre!\nWelcome to the World of tools.\nbye\n');
    expect(result).toBe('Edited greeting.txt: replaced it. Lines 1-3 of 3 now:\n1\tHello, cadre!\n2\tWelcome to the World of tools.\n3\tbye\nCheck the task: if it asks for more, do that next; if all of it is done, finish with your answer.');
    // Replacement text is taken as it is: no $& or $1 patterns.
    await plan(ws, 'fs.edit', { path: 'greeting.txt', old_text: 'bye', new_text: 'costs $& and $1' });
    expect(readFileSync(path.join(ws, 'greeting.txt'), 'utf8')).toContain('costs $& and $1\n');
  });

  test('text found several times is refused with the lines where it is, unless all: true', async () => {
    const ws = workspace({ 'greeting.txt': GREETING });
    const refused = await applicationFailure(model(ws, 'fs.edit', { path: 'greeting.txt', old_text: 'World', new_text: 'cadre' }));
    expect(refused).toMatchObject({ type: 'EditNotApplied', nonRetryable: true });
    expect(refused.message).toBe('old_text is in greeting.txt 2 times (lines 1, 2): nothing was changed. Add the lines around the one to change to old_text so that it is found once, or set all: true to replace every one.');
    expect(readFileSync(path.join(ws, 'greeting.txt'), 'utf8')).toBe(GREETING);
    expect(await plan(ws, 'fs.edit', { path: 'greeting.txt', old_text: 'World', new_text: 'cadre', all: true })).toEqual({ path: 'greeting.txt', replaced: 2, bytes: Buffer.byteLength('Hello, cadre!\nWelcome to the cadre of tools.\nbye\n') });
    expect(readFileSync(path.join(ws, 'greeting.txt'), 'utf8')).toBe('Hello, cadre!\nWelcome to the cadre of tools.\nbye\n');
  });

  test('text found nowhere is refused with the nearest lines, numbered, to copy exactly', async () => {
    const ws = workspace({ 'long.txt': LONG.replace('line 120\n', '  total = price * qty\n') });
    const refused = await applicationFailure(model(ws, 'fs.edit', { path: 'long.txt', old_text: 'total = price*qty', new_text: 'total = price * qty * 2' }));
    expect(refused.type).toBe('EditNotApplied');
    expect(refused.message).toBe(
      'old_text is not in long.txt: nothing was changed. The nearest lines (117-123):\n117\tline 117\n118\tline 118\n119\tline 119\n120\t  total = price * qty\n121\tline 121\n122\tline 122\n123\tline 123\n' +
        'Copy old_text exactly from the file, spaces included and without the line numbers (fs_read shows the lines).',
    );
    const nothingAlike = await applicationFailure(model(ws, 'fs.edit', { path: 'long.txt', old_text: 'zebra', new_text: 'x' }));
    expect(nothingAlike.message).toBe('old_text is not in long.txt: nothing was changed. Copy old_text exactly from the file, spaces included and without the line numbers (fs_read shows the lines).');
    await expect(model(ws, 'fs.edit', { path: 'nope.txt', old_text: 'a', new_text: 'b' })).rejects.toMatchObject({ type: 'FileNotFound' });
    await expect(model(ws, 'fs.edit', { path: 'long.txt', old_text: '', new_text: 'b' })).rejects.toMatchObject({ type: 'BadToolInput' });
  });
});

describe('the syntax check before a write or an edit', () => {
  const BROKEN: [string, string, RegExp][] = [
    ['settings.json', '{ "name": "cadre", "port": 8080, }', /^not written: settings\.json would not parse: line 1, column \d+: /],
    ['math.js', 'function add(a, b) {\n  return a + b;\n\nmodule.exports = { add };\n', /^not written: math\.js would not parse: line \d+, column \d+: '}' expected\./],
    ['util.ts', 'export function f(x: number) {\n  return x +;\n}\n', /^not written: util\.ts would not parse: line 2, column \d+: Expression expected\./],
    ['tool.py', 'def f(x):\n    return x +\n', /^not written: tool\.py would not parse: line 2, column \d+: /],
  ];

  test.each(BROKEN)('%s: a write that would not parse is refused, naming the line, and the file stays as it was', async (file, text, message) => {
    const ws = workspace({});
    const refused = await applicationFailure(model(ws, 'fs.write', { path: file, content: text }));
    expect(refused).toMatchObject({ type: 'SyntaxBroken', nonRetryable: true });
    expect(refused.message).toMatch(message);
    expect(refused.message).toContain('The file is unchanged; fix the text and try again.');
    expect(() => readFileSync(path.join(ws, file))).toThrow(/ENOENT/);
  });

  test('an edit that breaks a file is refused; one that mends it, or leaves a file broken before as broken, is not', async () => {
    const ws = workspace({ 'math.js': 'function add(a, b) {\n  return a - b;\n}\n', 'old.py': 'def f(:\n    pass\n', 'notes.txt': '{ not json' });
    const refused = await applicationFailure(model(ws, 'fs.edit', { path: 'math.js', old_text: 'return a - b;', new_text: 'return a + b;\n  }}' }));
    expect(refused.type).toBe('SyntaxBroken');
    expect(refused.message).toMatch(/^not written: math\.js would not parse: line 3, /);
    expect(readFileSync(path.join(ws, 'math.js'), 'utf8')).toContain('a - b');
    await model(ws, 'fs.edit', { path: 'math.js', old_text: 'a - b', new_text: 'a + b' });
    expect(readFileSync(path.join(ws, 'math.js'), 'utf8')).toContain('a + b');
    // A file that did not parse before is the author's business: the tool does not stand in the way of fixing it in steps.
    await model(ws, 'fs.edit', { path: 'old.py', old_text: 'pass', new_text: 'return 1' });
    // Files of other kinds are not checked.
    await model(ws, 'fs.write', { path: 'notes.txt', content: '{ still not json' });
    // Appending checks the whole file as it would be.
    writeFileSync(path.join(ws, 'list.json'), '[1, 2');
    await model(ws, 'fs.write', { path: 'list.json', content: ', 3]', append: true });
    expect(JSON.parse(readFileSync(path.join(ws, 'list.json'), 'utf8'))).toEqual([1, 2, 3]);
  });

  test('a file too big to read first is still overwritten, its new text checked', async () => {
    const ws = workspace({ 'big.json': `[${'1,'.repeat(300)}1]` });
    const small = { ...INLINE_OUTPUT_LIMITS, readBytes: 100 };
    const write = (content: string) => runTool('fs.write', { path: 'big.json', content }, { ...ctx(ws, false), limits: small });
    expect(await write('{"ok": true}')).toEqual({ path: 'big.json', bytes: 12 });
    await expect(write('{"ok": ')).rejects.toMatchObject({ type: 'SyntaxBroken' });
  });

  test('files that parse pass, in each language; a model is told what was written', async () => {
    const ws = workspace({});
    for (const [file, text] of [
      ['a.json', '{"a": [1, 2]}\n'],
      ['a.js', 'const x = { a: 1 };\nmodule.exports = x;\n'],
      ['a.tsx', 'export const A = () => <div>{1 as number}</div>;\n'],
      ['a.py', 'def f(x):\n    return [i for i in range(x)]\n'],
    ]) {
      expect(await syntaxProblem(file, text)).toBeUndefined();
      expect(await model(ws, 'fs.write', { path: file, content: text })).toMatch(new RegExp(`^Wrote \\d+ lines? \\(\\d+ bytes\\) to ${file.replace('.', '\\.')}\\. Check the task: if it asks for more, do that next; if all of it is done, finish with your answer\\.$`));
    }
  });
});
