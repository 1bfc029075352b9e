/**
 * Code navigation for agents and plans, on the TypeScript compiler's analysis (not text search):
 * where an imported symbol comes from, what implements a type, where a symbol is used, and
 * which calls pass values in and out of a function. Every answer is file, line and snippet,
 * relative to the workspace (or worktree) the step runs in.
 */
import path from 'node:path';
import ts from 'typescript';
import type { CodeFindImplementationsParams, CodeFindReferencesParams, CodeNavigateImportsParams, CodeTraceDataFlowParams } from '../../../plan-format/tools';
import { resolveInside } from '../../confinement';
import { ErrorTypes, permanent } from '../../../errors/application-failures';
import { type CodeLocation, type CodeProject, type CodeToolContext, identifiersNamed, isInProject, locationAt } from './project';
import { implementationsOf } from './implementations';
import { type CallerItem, incomingCalls } from './incoming-calls';
import { openProject } from './warm';

/**
 * The project of the workspace, and a file in it checked against the boundary. Paths are checked
 * before the project is opened: from there on a query runs without awaiting, so no other call
 * refreshes the service under it.
 */
async function projectWithFile(ctx: CodeToolContext, file: string): Promise<{ project: CodeProject; source: ts.SourceFile }> {
  const resolved = await resolveInside(ctx.boundary, file, 'file');
  const project = openProject(ctx.boundary, ctx.boundary.root);
  const source = project.program.getSourceFile(resolved.path);
  if (!source) throw permanent(ErrorTypes.BadToolInput, `file: ${file} is not a TypeScript or JavaScript source file of the workspace`);
  return { project, source };
}

/** The project's source files that hold `text` at all: the rest need not be walked. */
function* filesHolding(project: CodeProject, text: string, only?: string): Generator<ts.SourceFile> {
  for (const file of only ? [only] : project.files) {
    const source = project.program.getSourceFile(file);
    if (source?.text.includes(text)) yield source;
  }
}

function firstNamed(source: ts.SourceFile, symbol: string, file: string): ts.Identifier {
  const id = identifiersNamed(source, symbol)[0];
  if (!id) throw permanent(ErrorTypes.BadToolInput, `symbol: ${file} has no "${symbol}"`);
  return id;
}

function at(project: CodeProject, node: ts.Node): CodeLocation {
  return locationAt(project, node.getSourceFile().fileName, node.getStart());
}

type Hop = CodeLocation & { kind: 'import' | 're-export' | 'declaration' };

export async function navigateImports(params: CodeNavigateImportsParams, ctx: CodeToolContext) {
  const { project, source } = await projectWithFile(ctx, params.file);
  const checker = project.program.getTypeChecker();
  const id = firstNamed(source, params.symbol, params.file);
  let symbol = checker.getSymbolAtLocation(id);
  const chain: Hop[] = [];
  const maxDepth = params.maxDepth ?? 10;
  const declarationOf = (s: ts.Symbol | undefined) => s?.declarations?.[0];
  const first = declarationOf(symbol);
  if (first) chain.push({ ...at(project, first), kind: symbol && symbol.flags & ts.SymbolFlags.Alias ? 'import' : 'declaration' });
  // Each alias (an import or a re-export) points at the next: follow them one by one to the declaration.
  for (let depth = 0; symbol && symbol.flags & ts.SymbolFlags.Alias && depth < maxDepth; depth++) {
    const next = checker.getImmediateAliasedSymbol(symbol);
    const declaration = declarationOf(next);
    if (!next || !declaration) break;
    const isAlias = (next.flags & ts.SymbolFlags.Alias) !== 0;
    chain.push({ ...at(project, declaration), kind: isAlias ? 're-export' : 'declaration' });
    symbol = next;
  }
  const definition = chain.at(-1);
  return {
    symbol: params.symbol,
    chain,
    ...(definition?.kind === 'declaration' ? { definition } : { note: `stopped after ${maxDepth} hops or at a module the project does not hold` }),
  };
}

export async function findImplementations(params: CodeFindImplementationsParams, ctx: CodeToolContext) {
  const root = params.dir ? (await resolveInside(ctx.boundary, params.dir, 'dir')).path : ctx.boundary.root;
  const project = openProject(ctx.boundary, root);
  const declarations: ts.Identifier[] = [];
  for (const source of filesHolding(project, params.typeName)) {
    const visit = (node: ts.Node) => {
      if ((ts.isInterfaceDeclaration(node) || ts.isClassDeclaration(node)) && node.name?.text === params.typeName) declarations.push(node.name);
      node.forEachChild(visit);
    };
    visit(source);
  }
  if (declarations.length === 0) throw permanent(ErrorTypes.BadToolInput, `typeName: no interface or class "${params.typeName}" in ${path.relative(ctx.boundary.root, root) || '.'}`);
  const seen = new Set<string>();
  const implementations: (CodeLocation & { kind: string })[] = [];
  for (const name of declarations) {
    for (const found of implementationsOf(project, name)) {
      const key = `${found.fileName}:${found.start}`;
      // A re-export under another name is not an implementation, only a way to reach one.
      if (found.kind === ts.ScriptElementKind.alias) continue;
      const isDeclaration = declarations.some((d) => d.getSourceFile().fileName === found.fileName && (d.getStart() === found.start || d.parent.getStart() === found.start));
      if (seen.has(key) || !isInProject(project, found.fileName) || isDeclaration) continue;
      seen.add(key);
      implementations.push({ ...locationAt(project, found.fileName, found.start), kind: found.kind });
    }
  }
  return { typeName: params.typeName, declarations: declarations.map((d) => at(project, d)), implementations };
}

export async function findReferences(params: CodeFindReferencesParams, ctx: CodeToolContext) {
  const { project, source } = await projectWithFile(ctx, params.file);
  const id = firstNamed(source, params.symbol, params.file);
  const references: (CodeLocation & { definition: boolean })[] = [];
  for (const group of project.service.findReferences(source.fileName, id.getStart()) ?? []) {
    for (const ref of group.references) {
      if (!isInProject(project, ref.fileName)) continue;
      references.push({ ...locationAt(project, ref.fileName, ref.textSpan.start), definition: ref.isDefinition ?? false });
    }
  }
  references.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column);
  return { symbol: params.symbol, references };
}

interface CallEdge {
  /** The function that calls. */
  caller: string;
  callee: string;
  /** Where the call is. */
  at: CodeLocation;
  depth: number;
}

/**
 * Which calls pass values on: backward, the callers that pass values into the function (and
 * their callers, to maxDepth); forward, the calls the function passes its values to.
 */
export async function traceDataFlow(params: CodeTraceDataFlowParams, ctx: CodeToolContext) {
  const { project, source } = params.file ? await projectWithFile(ctx, params.file) : { project: openProject(ctx.boundary, ctx.boundary.root), source: undefined };
  const start = functionNamed(project, params.symbol, source?.fileName);
  const service = project.service;
  const [prepared] = ([] as ts.CallHierarchyItem[]).concat(service.prepareCallHierarchy(start.getSourceFile().fileName, start.getStart()) ?? []);
  if (!prepared) throw permanent(ErrorTypes.BadToolInput, `symbol: "${params.symbol}" is not something that is called`);
  const item: CallerItem = { name: prepared.name, file: prepared.file, selectionStart: prepared.selectionSpan.start };
  const direction = params.direction ?? 'both';
  const maxDepth = params.maxDepth ?? 3;
  const walk = (towards: 'backward' | 'forward'): CallEdge[] => {
    const edges: CallEdge[] = [];
    const visited = new Set<string>([`${item.file}:${item.selectionStart}`]);
    let frontier = [item];
    for (let depth = 1; depth <= maxDepth && frontier.length > 0; depth++) {
      const next: CallerItem[] = [];
      for (const current of frontier) {
        const calls = towards === 'backward' ? callsInto(project, current) : callsFrom(project, current);
        for (const { other, callStarts, file } of calls) {
          if (!isInProject(project, other.file)) continue;
          for (const callStart of callStarts) {
            edges.push({
              caller: towards === 'backward' ? other.name : current.name,
              callee: towards === 'backward' ? current.name : other.name,
              at: locationAt(project, file, callStart),
              depth,
            });
          }
          const key = `${other.file}:${other.selectionStart}`;
          if (!visited.has(key)) {
            visited.add(key);
            next.push(other);
          }
        }
      }
      frontier = next;
    }
    // One order whichever search answered, by depth and then where the call is, each edge once (TypeScript's search can list a call twice).
    const sorted = edges.sort((a, b) => a.depth - b.depth || a.at.file.localeCompare(b.at.file) || a.at.line - b.at.line || a.at.column - b.at.column || a.caller.localeCompare(b.caller) || a.callee.localeCompare(b.callee));
    const key = (e: CallEdge) => `${e.depth}\0${e.at.file}\0${e.at.line}\0${e.at.column}\0${e.caller}\0${e.callee}`;
    return sorted.filter((edge, i) => i === 0 || key(edge) !== key(sorted[i - 1]));
  };
  return {
    symbol: params.symbol,
    definition: at(project, start),
    ...(direction !== 'forward' && { backward: walk('backward') }),
    ...(direction !== 'backward' && { forward: walk('forward') }),
  };
}

/** The callers of an item, and the file each call is in (the caller's). */
function callsInto(project: CodeProject, item: CallerItem) {
  return incomingCalls(project, item.file, item.selectionStart).calls.map(({ from, callStarts }) => ({ other: from, callStarts, file: from.file }));
}

/** What an item calls, and the file each call is in (the item's). */
function callsFrom(project: CodeProject, item: CallerItem) {
  return project.service.provideCallHierarchyOutgoingCalls(item.file, item.selectionStart).map((call) => ({
    other: { name: call.to.name, file: call.to.file, selectionStart: call.to.selectionSpan.start },
    callStarts: call.fromSpans.map((span) => span.start),
    file: item.file,
  }));
}

/** The declaration name of a function, method or function-valued variable called `symbol`. */
function functionNamed(project: CodeProject, symbol: string, inFile?: string): ts.Identifier {
  for (const source of filesHolding(project, symbol, inFile)) {
    for (const id of identifiersNamed(source, symbol)) {
      const parent = id.parent;
      const isFunction =
        ts.isFunctionDeclaration(parent) ||
        ts.isMethodDeclaration(parent) ||
        (ts.isVariableDeclaration(parent) && !!parent.initializer && (ts.isArrowFunction(parent.initializer) || ts.isFunctionExpression(parent.initializer)));
      if (isFunction && (parent as ts.NamedDeclaration).name === id) return id;
    }
  }
  throw permanent(ErrorTypes.BadToolInput, `symbol: no function "${symbol}" in ${inFile ? path.relative(project.root, inFile) : 'the workspace'}`);
}
