/**
 * What the code tools share: the project they query (a warm TypeScript language service over the
 * source files of a directory inside the boundary, warm.ts) and how they answer locations.
 */
import path from 'node:path';
import ts from 'typescript';
import { isInside } from '../../confinement';
import type { ToolContext } from '../context';

/** What the code tools use of a tool's context: the workspace (they run in their own thread, thread.ts). */
export type CodeToolContext = Pick<ToolContext, 'boundary'>;

/** The files a project is made of (declaration files are read but not listed). */
export const SOURCE_FILE = /\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/;
/** Directories no code tool looks into: dependencies, git's own, build output, cadre's store. */
export const SKIPPED_DIRS = new Set(['node_modules', '.git', 'dist', 'build', 'coverage', '.cadre']);
/** A bigger tree is refused rather than analysed for minutes inside one activity. */
export const MAX_SOURCE_FILES = 20_000;

export interface CodeProject {
  /** The directory analysed, symlinks resolved. */
  root: string;
  service: ts.LanguageService;
  program: ts.Program;
  files: readonly string[];
}

export interface CodeLocation {
  /** Relative to the directory analysed. */
  file: string;
  /** 1-based. */
  line: number;
  column: number;
  snippet: string;
}

const MAX_SNIPPET = 200;

/** Where a position is, as the tools answer it. Files outside the root (libraries) are left out by callers. */
export function locationAt(project: CodeProject, fileName: string, position: number): CodeLocation {
  const source = project.program.getSourceFile(fileName);
  const { line, character } = source ? source.getLineAndCharacterOfPosition(position) : { line: 0, character: 0 };
  const starts = source?.getLineStarts() ?? [];
  const lineText = source ? source.text.slice(starts[line], starts[line + 1] ?? source.text.length).trim() : '';
  return {
    file: path.relative(project.root, fileName),
    line: line + 1,
    column: character + 1,
    snippet: lineText.length > MAX_SNIPPET ? `${lineText.slice(0, MAX_SNIPPET)}…` : lineText,
  };
}

export function isInProject(project: CodeProject, fileName: string): boolean {
  return fileName !== project.root && isInside(fileName, project.root) && !path.relative(project.root, fileName).split(path.sep).includes('node_modules');
}

/** The identifiers named `symbol` in a file, declarations first. */
export function identifiersNamed(source: ts.SourceFile, symbol: string): ts.Identifier[] {
  const found: ts.Identifier[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isIdentifier(node) && node.text === symbol) found.push(node);
    node.forEachChild(visit);
  };
  visit(source);
  const isDeclarationName = (id: ts.Identifier) => {
    const parent = id.parent as ts.Node & { name?: ts.Node };
    return parent.name === id;
  };
  return [...found.filter(isDeclarationName), ...found.filter((id) => !isDeclarationName(id))];
}
