/** Redirections that write files: which file a `>`, `>>`, `&>` ... writes, and the statement it belongs to. */
import type { Node } from 'web-tree-sitter';
import { parentOf, type Layer, type Target } from './segments';
import { wordOf } from './words';

/** Where output may go without writing a file. */
const NOT_FILES = new Set(['/dev/null', '/dev/stdout', '/dev/stderr']);

/**
 * The file a redirection writes (`>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>& FILE`), or undefined for
 * input (`<`, `<&`), a copy or close of a descriptor (`2>&1`, `>&2`, `>&-`, `>&3-`), a process
 * substitution (what it runs is a segment) and /dev/null, /dev/stdout, /dev/stderr.
 */
export function fileWritten(redirect: Node): Target | undefined {
  const descriptor = redirect.childForFieldName('descriptor');
  const destination = redirect.childForFieldName('destination');
  const from = (descriptor?.endIndex ?? redirect.startIndex) - redirect.startIndex;
  const operator = redirect.text.slice(from, (destination?.startIndex ?? redirect.endIndex) - redirect.startIndex).trim();
  if (!operator.includes('>') || !destination || destination.type === 'process_substitution') return undefined;
  const target = targetOf(destination);
  if (target.known && NOT_FILES.has(target.path)) return undefined;
  // `>&2`, `2>&1`, `>&3-`: descriptors (bash writes a file for any other word, even after `2>&`).
  if (operator.endsWith('&') && !operator.startsWith('&') && target.known && /^(\d+-?|-)$/.test(target.path)) return undefined;
  return target;
}

export function targetOf(node: Node): Target {
  const word = wordOf(node);
  return word?.value !== undefined ? { path: word.value, known: true } : { path: node.text, known: false };
}

/** The statement a redirection belongs to, for the text a person sees: `git status > out`, `{ ...; } > f`. */
export function statementOf(node: Node, at: Layer): Node {
  let statement = node;
  for (let parent = parentOf(statement, at); parent; parent = parentOf(statement, at)) {
    statement = parent;
    if (['redirected_statement', 'command', 'function_definition', 'test_command'].includes(parent.type)) break;
  }
  return statement;
}

/** Inside `[ ... ]` (not `[[ ... ]]`), where `>` is a redirection of the `[` command. */
export function inSingleBracketTest(node: Node, at: Layer): boolean {
  let parent = parentOf(node, at);
  while (parent && ['binary_expression', 'unary_expression', 'parenthesized_expression', 'negated_expression'].includes(parent.type)) parent = parentOf(parent, at);
  return parent?.type === 'test_command' && parent.child(0)?.type === '[';
}
