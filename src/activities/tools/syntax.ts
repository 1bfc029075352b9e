/**
 * The syntax check `fs.write` and `fs.edit` make before they change a `.json`, JavaScript,
 * TypeScript or Python file: JSON by its own parser, JavaScript and TypeScript by the TypeScript
 * compiler's parser, Python by tree-sitter's grammar (WebAssembly, as the shell parser). Only
 * syntax: nothing runs, nothing is type-checked. Each parser loads once, on first use.
 */
import path from 'node:path';
import type { Node as SyntaxNode } from 'web-tree-sitter';
import { treeSitterParser } from '../../tree-sitter-parsers';

export interface SyntaxProblem {
  /** 1-based. */
  line: number;
  column: number;
  message: string;
}

const SCRIPT = new Set(['.js', '.mjs', '.cjs', '.jsx', '.ts', '.mts', '.cts', '.tsx']);

/** Whether the file's name is one the check knows. */
export function checksSyntax(file: string): boolean {
  const ext = path.extname(file).toLowerCase();
  return ext === '.json' || ext === '.py' || SCRIPT.has(ext);
}

/** The first syntax error of `text` as the file named `file`, or undefined (also for files of other kinds). */
export async function syntaxProblem(file: string, text: string): Promise<SyntaxProblem | undefined> {
  const ext = path.extname(file).toLowerCase();
  if (ext === '.json') return jsonProblem(text);
  if (ext === '.py') return pythonProblem(text);
  if (SCRIPT.has(ext)) return scriptProblem(path.basename(file), text);
  return undefined;
}

function jsonProblem(text: string): SyntaxProblem | undefined {
  try {
    JSON.parse(text);
    return undefined;
  } catch (err) {
    const message = (err as Error).message;
    // Node 20 says "at position N"; later versions say "(line L column C)" as well.
    const lineColumn = /line (\d+) column (\d+)/.exec(message);
    if (lineColumn) return { line: Number(lineColumn[1]), column: Number(lineColumn[2]), message: message.replace(/\s*\(line \d+ column \d+\)/, '') };
    const position = /at position (\d+)/.exec(message);
    const at = position ? Number(position[1]) : text.length;
    return { ...lineAndColumn(text, at), message: message.replace(/ in JSON at position \d+.*$/, '').replace(/^JSON\.parse: /, '') };
  }
}

async function scriptProblem(name: string, text: string): Promise<SyntaxProblem | undefined> {
  const ts = await import('typescript');
  const kind = /\.[cm]?tsx?$/.test(name) ? (name.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS) : name.endsWith('x') ? ts.ScriptKind.JSX : ts.ScriptKind.JS;
  const source = ts.createSourceFile(name, text, ts.ScriptTarget.Latest, false, kind);
  // The parser's own diagnostics: what `tsc` reports as syntax errors (TS1xxx), nothing of types.
  const first = (source as unknown as { parseDiagnostics?: { start?: number; messageText: string | { messageText: string } }[] }).parseDiagnostics?.[0];
  if (!first) return undefined;
  const message = typeof first.messageText === 'string' ? first.messageText : first.messageText.messageText;
  return { ...lineAndColumn(text, first.start ?? 0), message };
}

async function pythonProblem(text: string): Promise<SyntaxProblem | undefined> {
  const tree = (await treeSitterParser('tree-sitter-python/tree-sitter-python.wasm')).parse(text);
  if (!tree) return undefined;
  try {
    if (!tree.rootNode.hasError) return undefined;
    const bad = firstError(tree.rootNode);
    if (!bad) return { line: 1, column: 1, message: 'invalid syntax' };
    const { row, column } = bad.startPosition;
    const near = bad.text.split('\n')[0].slice(0, 40);
    const message = bad.isMissing ? `missing ${bad.type}` : near ? `invalid syntax near ${JSON.stringify(near)}` : 'invalid syntax';
    return { line: row + 1, column: column + 1, message };
  } finally {
    tree.delete();
  }
}

/** The first node, in the text's order, that is an error or a token the parser had to invent. */
function firstError(node: SyntaxNode): SyntaxNode | undefined {
  if (node.isError || node.isMissing) return node;
  for (const child of node.children) {
    if (child && (child.hasError || child.isMissing)) {
      const found = firstError(child);
      if (found) return found;
    }
  }
  return undefined;
}

function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n') };
}
