/**
 * A TypeScript language service over the source files of a directory inside the boundary: what
 * the code tools ask. Files are listed without following symlinks (nothing outside is read), and
 * the directory's tsconfig.json gives the compiler options when there is one.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { isInside } from '../../confinement';
import { ErrorTypes, permanent } from '../../../errors/application-failures';

const SOURCE = /\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/;
/** Directories no code tool looks into: dependencies, git's own, build output, cadre's store. */
export const SKIPPED_DIRS = new Set(['node_modules', '.git', 'dist', 'build', 'coverage', '.cadre']);
/** A bigger tree is refused rather than analysed for minutes inside one activity. */
export const MAX_SOURCE_FILES = 20_000;

export interface CodeProject {
  /** The directory analysed, symlinks resolved. */
  root: string;
  service: ts.LanguageService;
  program: ts.Program;
  files: string[];
}

export function sourceFiles(root: string): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isSymbolicLink()) continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) walk(full);
      } else if (entry.isFile() && SOURCE.test(entry.name) && !entry.name.endsWith('.d.ts')) {
        files.push(full);
        if (files.length > MAX_SOURCE_FILES) {
          throw permanent(ErrorTypes.TooLarge, `${root} holds more than ${MAX_SOURCE_FILES} source files; point dir at a part of it`);
        }
      }
    }
  };
  walk(root);
  return files.sort();
}

/** The directory's tsconfig.json when it has one (its `extends` may be read from outside: it is only read). */
function compilerOptions(root: string): ts.CompilerOptions {
  const defaults: ts.CompilerOptions = { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, moduleResolution: ts.ModuleResolutionKind.Node10 };
  const read = ts.readConfigFile(path.join(root, 'tsconfig.json'), ts.sys.readFile);
  const options = read.error || !read.config ? defaults : ts.parseJsonConfigFileContent(read.config, ts.sys, root).options;
  return { ...options, allowJs: true, noEmit: true };
}

export function openProject(root: string): CodeProject {
  const files = sourceFiles(root);
  const options = compilerOptions(root);
  const versions = new Map(files.map((f) => [f, String(statSync(f).mtimeMs)]));
  const host: ts.LanguageServiceHost = {
    getScriptFileNames: () => files,
    getScriptVersion: (file) => versions.get(file) ?? '0',
    getScriptSnapshot: (file) => {
      try {
        return ts.ScriptSnapshot.fromString(readFileSync(file, 'utf8'));
      } catch {
        return undefined;
      }
    },
    getCurrentDirectory: () => root,
    getCompilationSettings: () => options,
    getDefaultLibFileName: (o) => ts.getDefaultLibFilePath(o),
    fileExists: ts.sys.fileExists,
    readFile: ts.sys.readFile,
    readDirectory: ts.sys.readDirectory,
    directoryExists: ts.sys.directoryExists,
    getDirectories: ts.sys.getDirectories,
  };
  const service = ts.createLanguageService(host, ts.createDocumentRegistry());
  const program = service.getProgram();
  if (!program) throw permanent(ErrorTypes.BadToolInput, `dir: ${root} could not be analysed as a TypeScript project`);
  return { root, service, program, files };
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
  const text = source?.text ?? '';
  const { line, character } = source ? source.getLineAndCharacterOfPosition(position) : { line: 0, character: 0 };
  const lineText = text.split('\n')[line]?.trim() ?? '';
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
