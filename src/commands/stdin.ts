/** Standard input: what a shell that reads its script from stdin would run (heredocs, here-strings, `< file`, pipes). */
import type { Node } from 'web-tree-sitter';
import { parentOf, UNKNOWN_STDIN, type Layer, type ScriptText, type Stdin } from './segments';
import { partsOf, printedBy, wordOf } from './words';

export function stdinOf(command: Node, redirects: Node[], at: Layer): Stdin {
  let stdin: Stdin | undefined;
  // The last redirect of stdin wins, as in the shell.
  for (const redirect of redirects) {
    const descriptor = redirect.childForFieldName('descriptor')?.text;
    if (descriptor !== undefined && descriptor !== '0') continue;
    if (redirect.type === 'heredoc_redirect') stdin = { kind: 'script', script: heredocScript(redirect) };
    else if (redirect.type === 'herestring_redirect') {
      const target = redirect.namedChildren.find((child) => child.type !== 'file_descriptor');
      const word = target ? wordOf(target) : undefined;
      if (word) stdin = { kind: 'script', script: { text: `${word.template}\n`, exact: word.value !== undefined } };
    } else if (redirect.type === 'file_redirect') {
      const operator = redirect.children.find((child) => !child.isNamed)?.type ?? '';
      if (operator === '<') stdin = stdinFile(redirect);
      else if (operator.startsWith('<')) stdin = UNKNOWN_STDIN;
    }
  }
  if (stdin) return stdin;
  const previous = previousStage(command, at);
  if (previous === undefined) return at.stdin;
  return (previous !== 'unknown' && outputOf(previous, at)) || UNKNOWN_STDIN;
}

/** `< FILE`: the file, read as a script by a shell reading stdin; /dev/null holds an empty one. */
function stdinFile(redirect: Node): Stdin {
  const target = redirect.childForFieldName('destination');
  const word = target ? wordOf(target) : undefined;
  if (word?.value === '/dev/null') return { kind: 'script', script: { text: '', exact: true } };
  return { kind: 'file', file: word ?? { source: target?.text ?? redirect.text, template: target?.text ?? redirect.text } };
}

function heredocScript(redirect: Node): ScriptText {
  const start = redirect.children.find((child) => child.type === 'heredoc_start')?.text ?? '';
  const body = redirect.children.find((child) => child.type === 'heredoc_body');
  let text = body?.text ?? '';
  if (redirect.children.some((child) => child.type === '<<-')) text = text.replace(/^\t+/gm, '');
  // A quoted delimiter (<<'EOF') keeps the body as it is; otherwise the shell expands it first.
  if (/['"\\]/.test(start)) return { text, exact: true };
  const expands = body?.namedChildren.some((child) => child.type !== 'heredoc_content') ?? false;
  return { text: text.replace(/\\([$`\\])/g, '$1').replace(/\\\n/g, ''), exact: !expands };
}

/**
 * The shell ends a heredoc at the first line equal to its delimiter with quotes removed (`<<E"O"F`
 * ends at `EOF`); the tree may not. A body line the shell would stop at means the lines after it
 * are commands the tree took for data: returned, so the command counts as unparsable.
 */
export function heredocEndsEarly(redirect: Node): string | undefined {
  const start = redirect.children.find((child) => child.type === 'heredoc_start')?.text ?? '';
  const body = redirect.children.find((child) => child.type === 'heredoc_body')?.text ?? '';
  const stripTabs = redirect.children.some((child) => child.type === '<<-');
  const delimiter = removeQuotes(start);
  return body.split('\n').find((line) => (stripTabs ? line.replace(/^\t+/, '') : line) === delimiter);
}

/** Quote removal of a literal word: 'single', "double" (\ escapes $ ` " \), and \x outside quotes. */
function removeQuotes(text: string): string {
  let out = '';
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (quote === "'") {
      if (char === "'") quote = undefined;
      else out += char;
    } else if (char === '\\' && i + 1 < text.length && (quote === undefined || '$`"\\'.includes(text[i + 1]))) out += text[++i];
    else if (char === quote) quote = undefined;
    else if (quote === undefined && (char === "'" || char === '"')) quote = char;
    else out += char;
  }
  return out;
}

/** The pipeline stage feeding this command's stdin: undefined when not piped, 'unknown' when unclear. */
function previousStage(command: Node, at: Layer): Node | 'unknown' | undefined {
  let node = command;
  for (let parent = parentOf(node, at); parent?.type === 'redirected_statement' || parent?.type === 'negated_command'; parent = parentOf(node, at)) {
    if (parent.type === 'redirected_statement' && !parent.childForFieldName('body')?.equals(node)) break;
    node = parent;
  }
  const pipeline = parentOf(node, at);
  if (pipeline?.type !== 'pipeline') return undefined;
  const stages = pipeline.namedChildren;
  const index = stages.findIndex((stage) => stage.equals(node));
  if (index > 0) return stages[index - 1];
  // `cat <<EOF | sh`: the pipeline hangs off the heredoc, fed by the statement the heredoc belongs to.
  const heredoc = parentOf(pipeline, at);
  if (heredoc?.type !== 'heredoc_redirect') return undefined;
  const statement = parentOf(heredoc, at);
  return statement?.type === 'redirected_statement' ? statement : 'unknown';
}

/** What `echo ... |` or `cat <<EOF |` writes, when it is literal. */
function outputOf(stage: Node, at: Layer): Stdin | undefined {
  const command = stage.type === 'redirected_statement' ? stage.childForFieldName('body') : stage;
  if (command?.type !== 'command') return undefined;
  const { words, redirects, assignments } = partsOf(command, command.equals(stage) ? parentOf(stage, at) : stage);
  if (assignments.length > 0) return undefined;
  const program = words[0]?.value;
  if (program === 'cat' && words.length === 1) {
    // cat passes on what it reads: a heredoc, a here-string, or what is piped in.
    const stdin = stdinOf(command, redirects, { ...at, stdin: UNKNOWN_STDIN });
    return stdin.kind === 'script' ? stdin : undefined;
  }
  if (redirects.length > 0) return undefined;
  const printed = printedBy(words);
  return printed === undefined ? undefined : { kind: 'script', script: { text: `${printed}\n`, exact: true } };
}
