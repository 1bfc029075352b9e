/**
 * `when` conditions, written in Jexl (a sandboxed expression language: it
 * interprets an AST and never calls eval). Pure and deterministic.
 */
import { Jexl } from 'jexl';

const jexl = new Jexl();

export class ExpressionError extends Error {}

interface AstNode {
  type: string;
  value?: unknown;
  from?: AstNode;
  [key: string]: unknown;
}

/** The dotted names an expression reads, such as `steps.search.output`. */
export function namesIn(expression: string): string[][] {
  let ast: AstNode | undefined;
  try {
    ast = jexl.compile(expression)._getAst() as AstNode | undefined;
  } catch (err) {
    throw new ExpressionError(`bad expression "${expression}": ${(err as Error).message}`);
  }
  if (!ast) throw new ExpressionError('empty expression');
  const names: string[][] = [];
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (node === null || typeof node !== 'object') return;
    const n = node as AstNode;
    if (n.type === 'Identifier' && !n.relative) {
      const chain: string[] = [];
      let cursor: AstNode | undefined = n;
      while (cursor && cursor.type === 'Identifier') {
        chain.unshift(String(cursor.value));
        cursor = cursor.from;
      }
      if (!cursor) {
        names.push(chain);
        return;
      }
      visit(cursor);
      return;
    }
    for (const [key, child] of Object.entries(n)) if (key !== 'type') visit(child);
  };
  visit(ast);
  return names;
}

export function evaluateCondition(expression: string, scope: Record<string, unknown>): boolean {
  try {
    return Boolean(jexl.evalSync(expression, scope));
  } catch (err) {
    throw new ExpressionError(`cannot evaluate "${expression}": ${(err as Error).message}`);
  }
}
