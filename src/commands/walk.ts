/** Parsing a script with tree-sitter-bash and walking every node of it: commands, assignments, redirections, strings. */
import type { Node } from 'web-tree-sitter';
import { clip, MAX_PARSED_LENGTH, parentOf, type Collector, type Layer } from './segments';
import { decodeNode, partsOf, wordOf, wordsOf } from './words';
import { fileWritten, inSingleBracketTest, statementOf, targetOf } from './redirects';
import { heredocEndsEarly, stdinOf } from './stdin';
import { scriptOf } from './scripts';
import { flagVariable } from './variables';
import { judge } from './wrappers';

export function parseScript(text: string, at: Layer, out: Collector): void {
  out.parsedLength += text.length;
  if (out.parsedLength > MAX_PARSED_LENGTH) {
    out.problems.push(`the scripts inside the command add up to more than ${MAX_PARSED_LENGTH} characters`);
    return;
  }
  const tree = out.parser.parse(text);
  if (!tree) {
    out.problems.push('the parser gave up');
    return;
  }
  try {
    if (tree.rootNode.hasError) out.problems.push(describeError(tree.rootNode, at));
    walk(tree.rootNode, { ...at, parents: new Map() }, out);
  } finally {
    // Trees live in WebAssembly memory: nothing frees them but this.
    tree.delete();
  }
}

function describeError(root: Node, at: Layer): string {
  const where = at.via.length > 0 ? ` in the script run by ${at.via.join(' ')}` : '';
  const stack: Node[] = [root];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node.isMissing) return `a "${node.type}" is missing at character ${node.startIndex}${where}`;
    if (node.isError) return `cannot parse ${JSON.stringify(clip(node.text, 60))} at character ${node.startIndex}${where}`;
    for (let i = node.childCount - 1; i >= 0; i--) {
      const child = node.child(i);
      if (child?.hasError || child?.isMissing) stack.push(child);
    }
  }
  return `cannot parse the command${where}`;
}

/** A literal like 'a[$(cmd)]' runs cmd when arithmetic evaluates it ($((x)), [[ x -eq 1 ]], let). */
const SUBSCRIPT_SUBSTITUTION = /\[[^\]]*(\$\(|`)/;

function walk(root: Node, at: Layer, out: Collector): void {
  // Iterative: a deeply nested $( $( $( ... ))) must not overflow the JavaScript stack.
  const stack: Node[] = [root];
  const parents = at.parents!;
  while (stack.length > 0) {
    if (out.full()) return;
    const node = stack.pop()!;
    switch (node.type) {
      case 'command':
        visitCommand(node, at, out);
        break;
      case 'command_name':
        // Outside a command only in a tree with errors: judge what can be read.
        if (parentOf(node, at)?.type !== 'command') judge(wordsOf(node), at, { out, text: node.text });
        break;
      case 'function_definition': {
        const name = node.childForFieldName('name')?.text;
        if (name) out.functions.add(name);
        break;
      }
      case 'variable_assignment': {
        const name = node.childForFieldName('name')?.text ?? '';
        const value = node.childForFieldName('value');
        const word = value ? wordOf(value) : undefined;
        flagVariable(name, node.text, word ? scriptOf(word) : { text: '', exact: true }, at, out);
        break;
      }
      case 'heredoc_redirect': {
        const early = heredocEndsEarly(node);
        if (early !== undefined) out.problems.push(`the heredoc ends at line ${JSON.stringify(early)} for the shell, not where it seems`);
        break;
      }
      case 'file_redirect': {
        const target = node.childForFieldName('destination') ?? node.lastNamedChild;
        const path = target ? decodeNode(target, 0).template : '';
        if (/^\/dev\/(tcp|udp)\//.test(path)) out.hazard(node.text, `opens a network connection (${path})`, at);
        const written = fileWritten(node);
        if (written) out.write(statementOf(node, at).text, written, at);
        break;
      }
      case 'binary_expression': {
        // `[ a > b ]`: `[` is a command like any other, so `> b` writes b (in `[[ ]]` it compares).
        const operator = node.childForFieldName('operator')?.type;
        const right = node.childForFieldName('right');
        if ((operator === '>' || operator === '>>') && right && inSingleBracketTest(node, at)) {
          out.write(statementOf(node, at).text, targetOf(right), at);
        }
        break;
      }
      case 'raw_string':
      case 'string_content':
      case 'ansi_c_string':
      case 'heredoc_content':
      case 'heredoc_body':
        if (SUBSCRIPT_SUBSTITUTION.test(node.text) && node.namedChildCount === 0) {
          out.hazard(node.text, 'a string holds $( ) or ` ` inside [ ]: arithmetic on it runs that command', at);
        }
        break;
    }
    for (let i = node.childCount - 1; i >= 0; i--) {
      const child = node.child(i);
      if (!child) continue;
      parents.set(child.id, node);
      stack.push(child);
    }
  }
}

function visitCommand(node: Node, at: Layer, out: Collector): void {
  const { words, redirects } = partsOf(node, parentOf(node, at));
  if (words.length === 0) return;
  redirects.push(...trailingRedirects(node, at));
  judge(words, { ...at, stdin: stdinOf(node, redirects, at) }, { out, text: node.text });
}

/**
 * `echo ls | bash < x.sh`: the tree hangs the redirects of a pipeline's last command on the whole
 * pipeline (`redirected_statement(pipeline, < x.sh)`), though the shell gives them to that command.
 */
function trailingRedirects(command: Node, at: Layer): Node[] {
  const redirects: Node[] = [];
  let node = command;
  let parent = parentOf(node, at);
  // The command's own statement: its redirects are taken already.
  if (parent?.type === 'redirected_statement' && parent.childForFieldName('body')?.equals(node)) {
    node = parent;
    parent = parentOf(node, at);
  }
  while (parent?.type === 'pipeline' && parent.lastNamedChild?.equals(node)) {
    const statement = parentOf(parent, at);
    if (statement?.type !== 'redirected_statement' || !statement.childForFieldName('body')?.equals(parent)) break;
    redirects.push(...statement.namedChildren.filter((child) => child.type.endsWith('_redirect')));
    node = statement;
    parent = parentOf(node, at);
  }
  return redirects;
}
