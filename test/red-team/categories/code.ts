/**
 * Code navigation (code.*) reads nothing outside the workspace: a symlink and a hard link to an
 * outside file, an import that climbs out, a folder outside. The file they lead to holds a sentinel
 * in its code; no result may hold it. Its control: the same sentinel in a file of the workspace is
 * found, so the check sees what a leak would show.
 */
import { linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Case, reasons, resultCase } from '../cases';

export interface CodeTargets {
  /** A folder beside no workspace, holding `secret.ts`, whose function returns the sentinel. */
  dir: string;
  sentinel: string;
  remove(): void;
}

export function codeTargets(tag: string): CodeTargets {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cadre-rt-code-'));
  const sentinel = `code-sentinel-${tag}`;
  writeFileSync(path.join(dir, 'secret.ts'), `export function outsideSecret(): string {\n  return '${sentinel}';\n}\n`);
  return { dir, sentinel, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The workspace: links to the outside file, an import of each and one climbing out, a project file. */
export function prepareCode(ws: string, t: CodeTargets): void {
  mkdirSync(path.join(ws, 'src'), { recursive: true });
  symlinkSync(path.join(t.dir, 'secret.ts'), path.join(ws, 'src', 'linked.ts'));
  linkSync(path.join(t.dir, 'secret.ts'), path.join(ws, 'src', 'hard.ts'));
  const out = path.relative(path.join(ws, 'src'), path.join(t.dir, 'secret'));
  writeFileSync(
    path.join(ws, 'src', 'reach.ts'),
    `import { outsideSecret } from '${out}';\nimport { outsideSecret as viaLink } from './linked';\nimport { outsideSecret as viaHard } from './hard';\nexport const all = outsideSecret() + viaLink() + viaHard();\n`,
  );
  writeFileSync(path.join(ws, 'tsconfig.json'), '{ "compilerOptions": { "strict": true }, "include": ["src"] }\n');
}

const leaked = (t: CodeTargets) => (ctx: { outcome: { text: string } }) => reasons([ctx.outcome.text.includes(t.sentinel), 'the outside sentinel is in the result']);
// A file behind a link is no source file of the workspace to the tools: refused as one, or as outside.
const refused = /OutsideWorkspace|outside the workspace|hard link|not a TypeScript or JavaScript source file of the workspace/i;
/** What searches look for: the sentinel without its tag, so a result that repeats the query holds no sentinel. */
const needle = 'code-sentinel-';

export function codeCases(t: CodeTargets): Case[] {
  const c = (id: string, title: string, name: string, args: Record<string, unknown>, ranWhen: RegExp) => resultCase('code', id, title, { name, args }, ranWhen, leaked(t));
  return [
    c('code-search-all', 'search the whole workspace for the outside sentinel (behind a symlink and a hard link)', 'code_search', { text: needle }, /"matches"/),
    c('code-search-up', 'search the folder above the workspace', 'code_search', { text: needle, dir: '..' }, refused),
    c('code-search-abs', 'search the outside folder by its absolute path', 'code_search', { text: needle, dir: t.dir }, refused),
    c('code-refs-symlink', 'find references in the symlinked file', 'code_find_references', { file: 'src/linked.ts', symbol: 'outsideSecret' }, refused),
    c('code-refs-hardlink', 'find references in the hard-linked file', 'code_find_references', { file: 'src/hard.ts', symbol: 'outsideSecret' }, refused),
    c('code-refs-outside', 'find references in the outside file by its path', 'code_find_references', { file: path.join(t.dir, 'secret.ts'), symbol: 'outsideSecret' }, refused),
    ...['outsideSecret', 'viaLink', 'viaHard'].map((symbol) =>
      c(`code-imports-${symbol}`, `follow the import of ${symbol} out of the workspace`, 'code_navigate_imports', { file: 'src/reach.ts', symbol }, /"chain"/),
    ),
    c('code-trace-outside', 'trace the outside function', 'code_trace_data_flow', { symbol: 'outsideSecret' }, /no function "outsideSecret"|"flows"|"calls"/),
  ];
}

/** The control: the sentinel in a file of the workspace is found by the same search. */
export function codeControl(ws: string, t: CodeTargets): Case {
  mkdirSync(path.join(ws, 'src'), { recursive: true });
  writeFileSync(path.join(ws, 'src', 'inside.ts'), `export const inside = '${t.sentinel}';\n`);
  return resultCase('code', 'code-control-inside', 'search for the sentinel in a file of the workspace', { name: 'code_search', args: { text: needle } }, /"matches"/, leaked(t));
}
