/**
 * Who calls a function or a method: the answer of the language service's
 * provideCallHierarchyIncomingCalls, found faster for the usual shapes. For each search TypeScript
 * builds a map of every import of the program (about 7 ms on 2,000 files, not kept between
 * searches) and finds each textual match's token from its file's root. Here each file's names are
 * indexed once, kept with its SourceFile (which the service reuses while the file is unchanged),
 * only call sites are resolved, and renamed imports and re-exports are followed by name.
 *
 * Targets and callers whose answer TypeScript finds by rules not modelled here (default exports,
 * `export =`, import-equals, classes with heritage clauses, accessors and class properties, a
 * name used in JavaScript (CommonJS, JSDoc heritage), callers without a plain name) are asked of
 * TypeScript, so every answer is TypeScript's: test/unit/code-call-index.test.ts compares the two
 * on a fixture of those shapes and on cadre's own source.
 */
import ts from 'typescript';
import type { CodeProject } from './project';

/** A caller: its name, file and where its name is (the call hierarchy's item, as much as the tools use). */
export interface CallerItem {
  name: string;
  file: string;
  selectionStart: number;
}

export interface IncomingCall {
  from: CallerItem;
  /** Where each call in it starts. */
  callStarts: number[];
}

export interface IncomingCalls {
  calls: IncomingCall[];
  /** Which search answered: the name index, or TypeScript's own for a shape the index leaves to it. */
  answeredBy: 'index' | 'typescript';
}

/** The calls into the function or method named at `position` of `file`. */
export function incomingCalls(project: CodeProject, file: string, position: number): IncomingCalls {
  const indexed = position === 0 ? [] : fromIndex(project.program, file, position);
  if (indexed) return { calls: indexed, answeredBy: 'index' };
  const calls = project.service.provideCallHierarchyIncomingCalls(file, position).map((call) => ({
    from: { name: call.from.name, file: call.from.file, selectionStart: call.from.selectionSpan.start },
    callStarts: call.fromSpans.map((span) => span.start),
  }));
  return { calls, answeredBy: 'typescript' };
}

/** Thrown inside the search when it meets what it does not model: TypeScript answers instead. */
class NotModelled extends Error {}

interface Target {
  symbol: ts.Symbol;
  name: string;
  kind: 'function' | 'method';
  /** Where references may be (a private member's class); anywhere when undefined. */
  scope?: ts.Node;
}

function fromIndex(program: ts.Program, file: string, position: number): IncomingCall[] | undefined {
  const source = program.getSourceFile(file);
  if (!source || isJavaScript(source)) return undefined;
  const checker = program.getTypeChecker();
  const target = targetAt(checker, source, position);
  if (!target) return undefined;
  try {
    return callsInto(program, checker, target);
  } catch (err) {
    if (err instanceof NotModelled) return undefined;
    throw err;
  }
}

/** JavaScript brings CommonJS exports and requires and JSDoc heritage, which the index does not model. */
function isJavaScript(source: ts.SourceFile): boolean {
  return /\.(js|jsx|mjs|cjs)$/.test(source.fileName);
}

/** The function or method whose name is at `position`, when the index models it. */
function targetAt(checker: ts.TypeChecker, source: ts.SourceFile, position: number): Target | undefined {
  const name = nameAt(source, position);
  if (!name) return undefined;
  const declaration = name.parent;
  let kind: Target['kind'];
  let scope: ts.Node | undefined;
  if (ts.isFunctionDeclaration(declaration) && declaration.name === name && declaration.body) {
    if (ts.getCombinedModifierFlags(declaration) & ts.ModifierFlags.Default) return undefined;
    kind = 'function';
  } else if (ts.isVariableDeclaration(declaration) && declaration.name === name && isAssignedFunction(declaration.initializer)) {
    kind = 'function';
  } else if (ts.isMethodDeclaration(declaration) && declaration.name === name && declaration.body && ts.isClassLike(declaration.parent) && !hasHeritage(checker, declaration.parent)) {
    kind = 'method';
    if (ts.getCombinedModifierFlags(declaration) & ts.ModifierFlags.Private || ts.isPrivateIdentifier(name)) {
      // TypeScript looks for a private member inside its class declaration only.
      if (!ts.isClassDeclaration(declaration.parent)) return undefined;
      scope = declaration.parent;
    }
  } else {
    return undefined;
  }
  const symbol = checker.getSymbolAtLocation(name);
  return symbol && { symbol: canonical(checker, symbol), name: name.text, kind, scope };
}

/** What TypeScript calls an assigned expression: a const's arrow function or unnamed function expression. */
function isAssignedFunction(initializer: ts.Expression | undefined): boolean {
  if (!initializer || !(ts.isArrowFunction(initializer) || (ts.isFunctionExpression(initializer) && !initializer.name))) return false;
  return (ts.getCombinedNodeFlags(initializer.parent) & ts.NodeFlags.Const) !== 0;
}

/** A class that extends or implements anything, or merges with an interface that does: its members are searched with their bases'. */
function hasHeritage(checker: ts.TypeChecker, node: ts.ClassLikeDeclaration): boolean {
  const declarations = (node.name && checker.getSymbolAtLocation(node.name)?.declarations) || [node];
  return declarations.some((d) => (ts.isClassLike(d) || ts.isInterfaceDeclaration(d)) && (d.heritageClauses?.length ?? 0) > 0);
}

/** The identifier (or #name) that starts at `position`. */
function nameAt(source: ts.SourceFile, position: number): ts.Identifier | ts.PrivateIdentifier | undefined {
  let node: ts.Node = source;
  for (;;) {
    const child: ts.Node | undefined = node.forEachChild((c) => (c.getStart(source) <= position && position < c.getEnd() ? c : undefined));
    if (!child) break;
    node = child;
  }
  return (ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) && node.getStart(source) === position ? node : undefined;
}

function canonical(checker: ts.TypeChecker, symbol: ts.Symbol): ts.Symbol {
  return checker.getExportSymbolOfSymbol(symbol);
}

/** Every call site of the target, grouped by the declaration it is in, files in program order. */
function callsInto(program: ts.Program, checker: ts.TypeChecker, target: Target): IncomingCall[] {
  const groups = new Map<ts.Node, number[]>();
  const names = [target.name];
  for (let i = 0; i < names.length; i++) {
    for (const source of program.getSourceFiles()) {
      if (program.isSourceFileDefaultLibrary(source)) continue;
      const named = namedIn(source, names[i]);
      if (named.length > 0 && isJavaScript(source)) throw new NotModelled();
      for (const node of named) {
        if (target.scope && (node.pos < target.scope.pos || node.end > target.scope.end || node.getSourceFile() !== target.scope.getSourceFile())) continue;
        const alias = aliasName(checker, node, target);
        if (alias !== undefined) {
          if (!names.includes(alias)) names.push(alias);
        } else if (isCallSite(node) && refersTo(checker, node, target)) {
          const caller = ts.findAncestor(node.parent, isCallerDeclaration) ?? source;
          const starts = groups.get(caller) ?? [];
          starts.push(node.getStart(source));
          groups.set(caller, starts);
        }
      }
    }
  }
  return [...groups].map(([caller, starts]) => ({ from: itemOf(caller), callStarts: starts.sort((a, b) => a - b) }));
}

/**
 * The name under which an import or re-export passes the target on (the same name too), or
 * undefined when `node` is not one. Default exports, `export =` and import-equals are not modelled.
 */
function aliasName(checker: ts.TypeChecker, node: ts.Node, target: Target): string | undefined {
  if (target.kind !== 'function') return undefined;
  const parent = node.parent;
  if (ts.isImportSpecifier(parent) || ts.isExportSpecifier(parent)) {
    const alias = checker.getSymbolAtLocation(parent.name);
    if (!alias || !sameSymbol(checker, alias, target)) return undefined;
    if (!ts.isIdentifier(parent.name) || parent.name.text === 'default') throw new NotModelled();
    return parent.name.text;
  }
  const exported = ts.isExportAssignment(parent) || (ts.isPropertyAccessExpression(parent) && ts.isExportAssignment(parent.parent));
  const imported = ts.isImportClause(parent) || ts.findAncestor(parent, ts.isImportEqualsDeclaration) !== undefined;
  if ((exported || imported) && checker.getSymbolAtLocation(node) && sameSymbol(checker, checker.getSymbolAtLocation(node)!, target)) throw new NotModelled();
  return undefined;
}

/** A function's reference, through any chain of imports and re-exports. */
function sameSymbol(checker: ts.TypeChecker, symbol: ts.Symbol, target: Target): boolean {
  const resolved = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  return canonical(checker, resolved) === target.symbol;
}

function refersTo(checker: ts.TypeChecker, node: ts.Node, target: Target): boolean {
  const symbol = checker.getSymbolAtLocation(node);
  if (!symbol) return false;
  if (target.kind === 'function') return sameSymbol(checker, symbol, target);
  // A method: the symbol itself, a union's or instantiation's member made from it, or a member that overrides it in a class or interface deriving from its class.
  return checker.getRootSymbols(symbol).some((root) => root === target.symbol || (!isStatic(root) && inheritsFrom(checker, root, target)));
}

function isStatic(symbol: ts.Symbol): boolean {
  const declaration = symbol.valueDeclaration;
  return !!declaration && (ts.getCombinedModifierFlags(declaration as ts.Declaration) & ts.ModifierFlags.Static) !== 0;
}

/** Whether a base type of the member's class or interface (transitively) has the target as its member of that name. */
function inheritsFrom(checker: ts.TypeChecker, member: ts.Symbol, target: Target): boolean {
  const seen = new Set<ts.Symbol>();
  const visit = (declarations: readonly ts.Declaration[] | undefined): boolean =>
    (declarations ?? []).some((declaration) =>
      superTypeNodes(declaration).some((reference) => {
        const type = checker.getTypeAtLocation(reference);
        if (!type.symbol) return false;
        const property = checker.getPropertyOfType(type, target.name);
        if (property && checker.getRootSymbols(property).includes(target.symbol)) return true;
        if (!(type.symbol.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface)) || seen.has(type.symbol)) return false;
        seen.add(type.symbol);
        return visit(type.symbol.declarations);
      }),
    );
  // Every declaration of the member's class or interface: one may merge with an interface that extends.
  const owners = (member.declarations ?? []).map((d) => d.parent).filter((p): p is ts.ClassLikeDeclaration | ts.InterfaceDeclaration => ts.isClassLike(p) || ts.isInterfaceDeclaration(p));
  if (owners.some((owner) => isJavaScript(owner.getSourceFile()))) throw new NotModelled();
  return visit(owners.flatMap((owner) => (owner.name && checker.getSymbolAtLocation(owner.name)?.declarations) || [owner]));
}

function superTypeNodes(declaration: ts.Node): readonly ts.ExpressionWithTypeArguments[] {
  if (!ts.isClassLike(declaration) && !ts.isInterfaceDeclaration(declaration)) return [];
  return (declaration.heritageClauses ?? []).flatMap((clause) => clause.types);
}

/** As TypeScript's call hierarchy counts a reference: a call, `new`, tag, decorator or JSX tag, or any property access. */
function isCallSite(node: ts.Node): boolean {
  const parent = node.parent;
  if ((ts.isPropertyAccessExpression(parent) && parent.name === node) || (ts.isElementAccessExpression(parent) && parent.argumentExpression === node)) return true;
  return (
    ((ts.isCallExpression(parent) || ts.isNewExpression(parent) || ts.isDecorator(parent)) && parent.expression === node) ||
    (ts.isTaggedTemplateExpression(parent) && parent.tag === node) ||
    ((ts.isJsxOpeningElement(parent) || ts.isJsxSelfClosingElement(parent)) && parent.tagName === node)
  );
}

/** The declarations TypeScript's call hierarchy groups calls by (isValidCallHierarchyDeclaration). */
function isCallerDeclaration(node: ts.Node): boolean {
  return (
    ts.isSourceFile(node) ||
    (ts.isModuleDeclaration(node) && ts.isIdentifier(node.name)) ||
    ts.isFunctionDeclaration(node) ||
    ts.isClassDeclaration(node) ||
    ts.isClassStaticBlockDeclaration(node) ||
    ts.isMethodDeclaration(node) ||
    ts.isMethodSignature(node) ||
    ts.isGetAccessorDeclaration(node) ||
    ts.isSetAccessorDeclaration(node) ||
    ((ts.isFunctionExpression(node) || ts.isClassExpression(node)) && !!node.name) ||
    isAssignedExpression(node)
  );
}

function isAssignedExpression(node: ts.Node): node is (ts.FunctionExpression | ts.ArrowFunction | ts.ClassExpression) & { parent: ts.VariableDeclaration | ts.PropertyDeclaration } {
  if (!(ts.isFunctionExpression(node) || ts.isArrowFunction(node) || ts.isClassExpression(node))) return false;
  const parent = node.parent;
  if (!(ts.isVariableDeclaration(parent) || ts.isPropertyDeclaration(parent)) || parent.initializer !== node || !ts.isIdentifier(parent.name)) return false;
  return ts.isPropertyDeclaration(parent) || (ts.getCombinedNodeFlags(parent) & ts.NodeFlags.Const) !== 0;
}

/** The caller's item as TypeScript names it, for callers with a plain name (others are left to TypeScript). */
function itemOf(caller: ts.Node): CallerItem {
  const file = caller.getSourceFile().fileName;
  if (ts.isSourceFile(caller)) return { name: caller.fileName, file, selectionStart: 0 };
  const name = isAssignedExpression(caller) ? caller.parent.name : (caller as ts.NamedDeclaration).name;
  if (!name || !ts.isIdentifier(name) || ts.isClassStaticBlockDeclaration(caller)) throw new NotModelled();
  return { name: name.text, file, selectionStart: name.getStart() };
}

const nameIndexes = new WeakMap<ts.SourceFile, Map<string, ts.Node[]>>();

/**
 * Indexes the names of `files` from `from` on, those not indexed yet, until `budgetMs` is spent:
 * in the tools' thread's idle time after a build (thread-main.ts), so that the first
 * trace_data_flow does not index every file (60 ms on 2,000). Returns where it stopped.
 */
export function indexAhead(files: readonly ts.SourceFile[], from: number, budgetMs: number): number {
  const until = performance.now() + budgetMs;
  let next = from;
  for (; next < files.length && performance.now() < until; next++) {
    if (!nameIndexes.has(files[next])) nameIndexes.set(files[next], indexNames(files[next]));
  }
  return next;
}

/** The identifiers (and element-access strings) of a file called `name`, from an index built on first use. */
function namedIn(source: ts.SourceFile, name: string): readonly ts.Node[] {
  let index = nameIndexes.get(source);
  if (!index) {
    if (!source.text.includes(name)) return [];
    index = indexNames(source);
    nameIndexes.set(source, index);
  }
  return index.get(name) ?? [];
}

function indexNames(source: ts.SourceFile): Map<string, ts.Node[]> {
  const index = new Map<string, ts.Node[]>();
  const visit = (node: ts.Node): void => {
    let name: string | undefined;
    if (ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) name = node.text;
    else if (ts.isStringLiteralLike(node) && ts.isElementAccessExpression(node.parent) && node.parent.argumentExpression === node) name = node.text;
    if (name !== undefined) {
      const list = index.get(name);
      if (list) list.push(node);
      else index.set(name, [node]);
    }
    node.forEachChild(visit);
  };
  visit(source);
  return index;
}
