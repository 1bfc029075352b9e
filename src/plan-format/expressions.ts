/**
 * `when` conditions, written in Jexl (a sandboxed expression language: it
 * interprets an AST and never calls eval). Pure and deterministic.
 *
 * Jexl parses and evaluates recursively, so an expression is bounded in length before it is
 * parsed (the parser's depth grows with the text) and in depth before it is evaluated.
 * cadre registers no transforms or functions, so `x | foo` and `foo()` are refused up front.
 *
 * Step ids may hold hyphens (`fetch-data`), which Jexl reads as minus: after `steps.` an id is read
 * whole, hyphens included (`steps.fetch-data.output`), and handed to Jexl as `steps["fetch-data"]`.
 * A subtraction right after a step id needs spaces: `steps.a.output - 1`.
 */
import { Jexl } from 'jexl';
import { MAX_EXPRESSION_DEPTH, MAX_EXPRESSION_LENGTH } from './limits';

const jexl = new Jexl();

export class ExpressionError extends Error {}

interface AstNode {
  type: string;
  value?: unknown;
  from?: AstNode;
  relative?: boolean;
  name?: string;
  pool?: string;
  [key: string]: unknown;
}

/** Parses an expression and checks what cadre allows in it; throws ExpressionError with the reason. */
function checkedCompile(expression: string) {
  if (typeof expression !== 'string' || expression.trim() === '') throw new ExpressionError('empty expression');
  if (expression.length > MAX_EXPRESSION_LENGTH) {
    throw new ExpressionError(
      `expression is ${expression.length.toLocaleString('en-US')} characters long; cadre allows ${MAX_EXPRESSION_LENGTH.toLocaleString('en-US')}: split the condition, or compute it in a step`,
    );
  }
  let compiled: ReturnType<typeof jexl.compile>;
  try {
    compiled = jexl.compile(withQuotedStepIds(expression));
  } catch (err) {
    throw new ExpressionError(`bad expression "${expression}": ${firstLine(err)}`);
  }
  const ast = compiled._getAst() as AstNode | undefined;
  if (!ast) throw new ExpressionError('empty expression');
  return { compiled, names: namesOf(ast, expression) };
}

/** Walks the AST without recursion: its depth, the functions it calls, the dotted names it reads. */
function namesOf(ast: AstNode, expression: string): string[][] {
  const names: string[][] = [];
  const stack: { node: AstNode; depth: number }[] = [{ node: ast, depth: 1 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop()!;
    if (depth > MAX_EXPRESSION_DEPTH) throw tooDeep();
    if (node.type === 'FunctionCall') {
      throw new ExpressionError(
        node.pool === 'transforms'
          ? `unknown transform "| ${String(node.name)}": cadre registers no Jexl transforms (use operators such as ==, <, &&, in)`
          : `unknown function "${String(node.name)}()": cadre registers no Jexl functions (use operators such as ==, <, &&, in)`,
      );
    }
    if ((node.type === 'Identifier' && !node.relative) || isQuotedKey(node)) {
      const chain: string[] = [];
      let cursor: AstNode | undefined = node;
      let chainDepth = depth;
      for (;;) {
        if (cursor?.type === 'Identifier') {
          chain.unshift(String(cursor.value));
          cursor = cursor.from;
        } else if (cursor && isQuotedKey(cursor)) {
          // steps["fetch-data"]: a name like any other.
          chain.unshift(String((cursor.expr as AstNode).value));
          cursor = cursor.subject as AstNode;
        } else break;
        chainDepth++;
      }
      if (chainDepth > MAX_EXPRESSION_DEPTH + 1) throw tooDeep();
      if (cursor) stack.push({ node: cursor, depth: chainDepth });
      else names.push(chain);
      continue;
    }
    const children: unknown[] = [];
    for (const [key, value] of Object.entries(node)) {
      if (ATTRIBUTES.has(key) || value === undefined || (key === 'value' && (node.type === 'Literal' || node.type === 'Identifier'))) continue;
      if (Array.isArray(value)) children.push(...value);
      else if (value !== null && typeof value === 'object' && !('type' in value)) children.push(...Object.values(value)); // object literal
      else children.push(value);
    }
    // Jexl parses `{a: }` and `a[]` with a hole where a node belongs; evaluating them throws.
    if (children.some((child) => child === null || typeof child !== 'object' || typeof (child as AstNode).type !== 'string')) {
      throw new ExpressionError(`bad expression "${expression}": a value is missing (as in {a: } or a[])`);
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push({ node: children[i] as AstNode, depth: depth + 1 });
  }
  return names;
}

/** `subject["key"]`: a property read by a string, as Jexl evaluates a filter whose expression is a plain string. */
function isQuotedKey(node: AstNode | undefined): boolean {
  if (node?.type !== 'FilterExpression' || node.relative) return false;
  const expr = node.expr as AstNode | undefined;
  return expr?.type === 'Literal' && typeof expr.value === 'string' && (node.subject as AstNode | undefined)?.type === 'Identifier';
}

/** `steps.<id>` with a hyphen in the id, outside string literals, where `steps` is the root name. */
const HYPHENATED_STEP = /steps\s*\.\s*([A-Za-z][A-Za-z0-9_]*(?:-+[A-Za-z0-9_]+)+)/y;
const NAME_CHAR = /[A-Za-z0-9_$.]/;

/** The expression with every `steps.fetch-data` written `steps["fetch-data"]`; unchanged when no step id holds a hyphen. */
export function withQuotedStepIds(expression: string): string {
  if (!expression.includes('-')) return expression;
  let out = '';
  let i = 0;
  while (i < expression.length) {
    const c = expression[i];
    if (c === '"' || c === "'") {
      // Copy a string literal whole, escapes included.
      let j = i + 1;
      while (j < expression.length && expression[j] !== c) j += expression[j] === '\\' ? 2 : 1;
      out += expression.slice(i, j + 1);
      i = j + 1;
      continue;
    }
    HYPHENATED_STEP.lastIndex = i;
    const match = c === 's' && (i === 0 || !NAME_CHAR.test(expression[i - 1])) ? HYPHENATED_STEP.exec(expression) : null;
    if (match) {
      out += `steps["${match[1]}"]`;
      i += match[0].length;
      continue;
    }
    out += c;
    i++;
  }
  return out;
}

/** AST fields that are not nodes. */
const ATTRIBUTES = new Set(['type', 'operator', 'name', 'pool', 'relative']);

function tooDeep(): ExpressionError {
  return new ExpressionError(`expression nests more than ${MAX_EXPRESSION_DEPTH} levels deep: simplify it, or split it over steps`);
}

/** The dotted names an expression reads, such as `steps.search.output`; throws ExpressionError when cadre refuses it. */
export function namesIn(expression: string): string[][] {
  return checkedCompile(expression).names;
}

export function evaluateCondition(expression: string, scope: Record<string, unknown>): boolean {
  const { compiled } = checkedCompile(expression);
  try {
    return Boolean(compiled.evalSync(scope));
  } catch (err) {
    throw new ExpressionError(`cannot evaluate "${expression}": ${firstLine(err)}`);
  }
}

function firstLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const line = message.split('\n')[0];
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}
