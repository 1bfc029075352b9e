/**
 * The code-navigation tools on a fixture project (test/fixtures/code-nav), with exact files and
 * lines; and one run of them as plan steps on the dev server.
 */
import { cpSync, linkSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { INLINE_OUTPUT_LIMITS, defaultToolSandbox } from '../src/activities/tools/context';
import { runTool } from '../src/activities/tools/run-tool';
import { applicationFailure } from './support/failures';
import { compile, startPlan, withWorker } from './support/harness';

const FIXTURE = path.join(__dirname, 'fixtures', 'code-nav');

/** A copy of the fixture in a workspace of its own, with an outside file a symlink points to. */
function workspace(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-code-'));
  const ws = path.join(dir, 'ws');
  cpSync(FIXTURE, ws, { recursive: true });
  writeFileSync(path.join(dir, 'outside.ts'), 'export function outsideSecret(): number { return 42; }\n');
  symlinkSync(path.join(dir, 'outside.ts'), path.join(ws, 'src', 'linked.ts'));
  return ws;
}

const ws = workspace();
const tool = (name: string, params: unknown, at = ws) =>
  runTool(name, params, { workspace: at, stepId: 'nav', attempt: 1, signal: new AbortController().signal, limits: INLINE_OUTPUT_LIMITS, sandbox: defaultToolSandbox() }) as Promise<Record<string, unknown>>;
const where = (locations: unknown) => (locations as { file: string; line: number }[]).map((l) => `${l.file}:${l.line}`);

describe('code navigation', () => {
  test('navigate_imports follows an import through two re-exports (one renaming) to the class', async () => {
    const out = await tool('code.navigate_imports', { file: 'src/app.ts', symbol: 'Round' });
    expect((out.chain as { kind: string }[]).map((hop) => hop.kind)).toEqual(['import', 're-export', 're-export', 'declaration']);
    expect(where(out.chain)).toEqual(['src/app.ts:1', 'src/index.ts:2', 'src/shapes/index.ts:1', 'src/shapes/circle.ts:3']);
    expect(out.definition).toMatchObject({ file: 'src/shapes/circle.ts', line: 3, snippet: 'export class Circle implements Shape {' });
    // Through `export *` the checker goes straight to the declaration.
    const square = await tool('code.navigate_imports', { file: 'src/app.ts', symbol: 'Square' });
    expect(where(square.chain)).toEqual(['src/app.ts:1', 'src/index.ts:3', 'src/shapes/square.ts:3']);
  });

  test('find_implementations finds the classes and the object that implement an interface', async () => {
    const out = await tool('code.find_implementations', { typeName: 'Shape' });
    expect(where(out.declarations)).toEqual(['src/shapes/shape.ts:2']);
    expect(where(out.implementations).sort()).toEqual(['src/shapes/circle.ts:3', 'src/shapes/square.ts:11', 'src/shapes/square.ts:3']);
  });

  test('find_references lists the definition and every use, not comments or README text', async () => {
    const out = await tool('code.find_references', { file: 'src/math.ts', symbol: 'totalArea' });
    const refs = out.references as { file: string; line: number; definition: boolean }[];
    expect(refs.map((r) => `${r.file}:${r.line}${r.definition ? ' (definition)' : ''}`)).toEqual([
      'src/app.ts:2',
      'src/app.ts:6',
      'src/math.ts:3 (definition)',
      'src/math.ts:12',
    ]);
  });

  test('trace_data_flow: the callers that pass values in, and the calls that pass them on', async () => {
    const back = await tool('code.trace_data_flow', { symbol: 'totalArea', direction: 'backward' });
    expect(back.definition).toMatchObject({ file: 'src/math.ts', line: 3 });
    const backward = back.backward as { caller: string; callee: string; at: { file: string; line: number }; depth: number }[];
    expect(backward.map((e) => `${e.caller} -> ${e.callee} @ ${e.at.file}:${e.at.line} (${e.depth})`).sort()).toEqual([
      'main -> report @ src/app.ts:7 (2)',
      'main -> totalArea @ src/app.ts:6 (1)',
      'report -> totalArea @ src/math.ts:12 (1)',
    ]);
    const forward = (await tool('code.trace_data_flow', { symbol: 'report', direction: 'forward', maxDepth: 1 })).forward as { callee: string; at: { line: number } }[];
    expect(forward.map((e) => `${e.callee}:${e.at.line}`).sort()).toEqual(['format:12', 'totalArea:12']);
  });

  test('search finds text in any file, and points at the precise tool for a TypeScript name', async () => {
    const out = await tool('code.search', { text: 'totalArea' });
    expect(where(out.matches)).toEqual(['README.md:1', 'src/app.ts:2', 'src/app.ts:6', 'src/math.ts:3', 'src/math.ts:12']);
    expect(out.hint).toContain('code.find_references');
    expect((await tool('code.search', { text: 'TOTALAREA', ignoreCase: true })).matches).toHaveLength(5);
    expect((await tool('code.search', { text: 'a small project' })).hint).toBeUndefined();
  });

  test('nothing outside the workspace is read: symlinked files are skipped, paths outside refused', async () => {
    expect(where((await tool('code.search', { text: 'outsideSecret' })).matches)).toEqual([]);
    await expect(tool('code.trace_data_flow', { symbol: 'outsideSecret' })).rejects.toThrow('no function "outsideSecret"');
    for (const file of ['../outside.ts', 'src/linked.ts', '/etc/passwd']) {
      const err = await applicationFailure(tool('code.find_references', { file, symbol: 'outsideSecret' }));
      expect(err).toMatchObject({ type: 'OutsideWorkspace', nonRetryable: true });
    }
    expect((await applicationFailure(tool('code.search', { text: 'x', dir: '..' }))).type).toBe('OutsideWorkspace');
  });

  test('imports that lead outside are not followed: a relative path out, a symlink, a hard link', async () => {
    const at = workspace();
    const outside = path.join(path.dirname(at), 'outside.ts');
    linkSync(outside, path.join(at, 'src', 'hard.ts'));
    writeFileSync(
      path.join(at, 'src', 'reach.ts'),
      "import { outsideSecret } from '../../outside';\nimport { outsideSecret as viaLink } from './linked';\nimport { outsideSecret as viaHardLink } from './hard';\nexport const all = outsideSecret() + viaLink() + viaHardLink();\n",
    );
    for (const symbol of ['outsideSecret', 'viaLink', 'viaHardLink']) {
      const out = await tool('code.navigate_imports', { file: 'src/reach.ts', symbol }, at);
      expect(where(out.chain)).toEqual(['src/reach.ts:1', 'src/reach.ts:2', 'src/reach.ts:3'].filter((_, i) => ['outsideSecret', 'viaLink', 'viaHardLink'][i] === symbol));
      expect(out.definition).toBeUndefined();
      expect(JSON.stringify(out)).not.toContain('return 42');
    }
    expect(where((await tool('code.find_references', { file: 'src/reach.ts', symbol: 'outsideSecret' }, at)).references)).toEqual(['src/reach.ts:1', 'src/reach.ts:4']);
    await expect(tool('code.trace_data_flow', { symbol: 'outsideSecret' }, at)).rejects.toThrow('no function "outsideSecret"');
    expect(where((await tool('code.search', { text: 'return 42' }, at)).matches)).toEqual([]);
  });

  test('bad input names the field', async () => {
    expect((await applicationFailure(tool('code.find_references', { file: 'src/math.ts', symbol: 'nope' }))).message).toBe('symbol: src/math.ts has no "nope"');
    expect((await applicationFailure(tool('code.find_references', { file: 'README.md', symbol: 'x' }))).message).toContain('is not a TypeScript or JavaScript source file');
    expect((await applicationFailure(tool('code.find_implementations', { typeName: 'Nope' }))).message).toContain('no interface or class "Nope"');
    expect((await applicationFailure(tool('code.find_references', { file: 'src/math.ts', symbol: 'a b' }))).type).toBe('BadToolInput');
  });

  test('as plan steps on the dev server: output templated into the next step; answers follow edits by tools and commands', async () => {
    const plan = compile(
      `
name: code-nav
steps:
  - { id: origin, tool: code.navigate_imports, with: { file: src/app.ts, symbol: Round } }
  - { id: note, tool: fs.write, with: { path: origin.txt, content: "{{ steps.origin.output.definition.file }}:{{ steps.origin.output.definition.line }}" } }
output: "{{ steps.origin.output.definition.snippet }}"
`,
      workspace(),
    );
    // The worker keeps the workspace's language service warm between steps: each query must see
    // the change made just before it, by fs.write or by a shell command (a same-size edit with
    // its modification time put back: only the change time tells), and a file added and removed.
    const refs = (id: string, after?: string) => `{ id: ${id}, ${after ? `dependsOn: [${after}], ` : ''}tool: code.find_references, with: { file: src/math.ts, symbol: totalArea } }`;
    const app = "import { report, totalArea } from './math';\\nexport const total = totalArea([]);\\nexport const text = report([]);\\n";
    const edits = compile(
      `
name: code-nav-edits
steps:
  - ${refs('before')}
  - { id: tool_write, dependsOn: [before], tool: fs.write, with: { path: src/app.ts, content: "${app}" } }
  - ${refs('after_tool_write', 'tool_write')}
  - id: shell_write
    dependsOn: [after_tool_write]
    tool: shell
    with: { command: "touch -r src/math.ts .stamp && sed 's/format(totalArea(shapes))/format(sumOfArea(shapes))/' src/math.ts > .math && cat .math > src/math.ts && touch -r .stamp src/math.ts && rm .math .stamp" }
  - ${refs('after_shell_write', 'shell_write')}
  - { id: shell_add, dependsOn: [after_shell_write], tool: shell, with: { command: "printf \\"import { totalArea } from './math';\\\\nexport const extra = totalArea([]);\\\\n\\" > src/extra.ts" } }
  - ${refs('after_add', 'shell_add')}
  - { id: shell_remove, dependsOn: [after_add], tool: shell, with: { command: "rm src/extra.ts" } }
  - ${refs('after_remove', 'shell_remove')}
output:
  before: "{{ steps.before.output.references }}"
  after_tool_write: "{{ steps.after_tool_write.output.references }}"
  after_shell_write: "{{ steps.after_shell_write.output.references }}"
  after_add: "{{ steps.after_add.output.references }}"
  after_remove: "{{ steps.after_remove.output.references }}"
`,
      workspace(),
    );
    await withWorker(async (h) => {
      const d = await h.client.result(await startPlan(h, plan));
      expect(d.status).toBe('completed');
      expect(d.output).toBe('export class Circle implements Shape {');

      const e = await h.client.result(await startPlan(h, edits));
      expect(e.status).toBe('completed');
      const seen = Object.fromEntries(Object.entries(e.output as Record<string, unknown>).map(([k, v]) => [k, where(v)]));
      expect(seen).toEqual({
        before: ['src/app.ts:2', 'src/app.ts:6', 'src/math.ts:3', 'src/math.ts:12'],
        after_tool_write: ['src/app.ts:1', 'src/app.ts:2', 'src/math.ts:3', 'src/math.ts:12'],
        after_shell_write: ['src/app.ts:1', 'src/app.ts:2', 'src/math.ts:3'],
        after_add: ['src/app.ts:1', 'src/app.ts:2', 'src/extra.ts:1', 'src/extra.ts:2', 'src/math.ts:3'],
        after_remove: ['src/app.ts:1', 'src/app.ts:2', 'src/math.ts:3'],
      });
    });
  });
});
