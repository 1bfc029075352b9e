/**
 * A shell command as the simple commands it runs. Every `program args` is found: inside lists,
 * pipes, subshells, groups, command and process substitutions, control flow, function bodies, and
 * the scripts handed to `sh -c`, `eval`, `su -c`, a heredoc fed to a shell... (parsed again, to a
 * bounded depth). Wrappers (`sudo`, `env`, `timeout`, `xargs`, `find -exec`, ...) are unwrapped so
 * the program that really runs is what gets judged, and quoting is decoded so `'r'm`, `\rm` and
 * `/bin/rm` all read as `rm`. A name only known at run time (`$x`, `$(cmd)`, a glob) is marked
 * computed rather than guessed; a script file a shell runs (`sh x.sh`, `. x.sh`, `bash < x.sh`) is
 * marked as one; every redirection that writes a file (`> out`, `2>> log`) is a segment of its own.
 *
 * Pure apart from loading the bash grammar (WebAssembly) once; the result is plain JSON data.
 */
import { readFile } from 'node:fs/promises';
import { Language, Parser, type Node } from 'web-tree-sitter';

export interface CommandSegment {
  /** The source text of this simple command (for a nested `sh -c` script: the text inside the script). */
  text: string;
  /** The program that runs and its arguments, quoting decoded; a word only known at run time keeps its source text. */
  argv: string[];
  /** argv[0] without its directory (`/bin/rm` → `rm`); its source text when computed; '' for a hazard alone. */
  program: string;
  /** Why what runs is only known at run time: `$x` as the program, `sh -c "$x"`, a script piped into `sh`. */
  computed?: string;
  /** Indexes of argv words only known at run time (expansions, globs): a prefix can only possibly match past one. */
  dynamicArgs?: number[];
  /** Arguments are appended at run time (`xargs rm`, `find -exec rm {} +`). */
  moreArgs?: true;
  /** The wrappers unwrapped to reach the program, outermost first: `sudo env rm x` → ['sudo', 'env']. */
  via?: string[];
  /** Each wrapper's own argv, outermost first, for rules about the wrapper itself (`sudo: deny`). */
  wrappers?: string[][];
  /**
   * Something a person should look at besides the program: a variable naming a program to run
   * (`PAGER=...`, `LD_PRELOAD=...`), git config that runs commands, a `/dev/tcp` connection.
   * A segment that is only a hazard has an empty argv.
   */
  hazard?: string;
  /**
   * A file the program runs as a script, which the rules cannot see into: `sh x.sh`, `. x.sh`,
   * `bash --rcfile x.sh`, `sh < x.sh`.
   */
  scriptFile?: string;
  /** Where scriptFile is in argv, when it is one of its words: a rule whose prefix reaches that far names it. */
  scriptFileArg?: number;
  /**
   * A file a redirection writes (`> out`, `2>> log`, `&> all`, `exec 3> f`, `{ ...; } > f`), its source
   * text when only known at run time (then `computed` says so). Such a segment is the write alone:
   * its argv is empty, and its text is the statement the redirection belongs to.
   */
  writes?: string;
}

export interface ParsedCommand {
  segments: CommandSegment[];
  /** Why (part of) the command could not be parsed; what could be read is still in `segments`. */
  unparsable?: string;
  /** Functions the command defines: a call to one is still a segment, but it is no program on PATH. */
  functions?: string[];
}

/** Scripts inside scripts (`sh -c "bash -c '...'"`) are parsed this deep; deeper is unparsable. */
export const MAX_SCRIPT_DEPTH = 8;
/** Longer commands are not parsed at all (they are unparsable, so a person looks). */
export const MAX_COMMAND_LENGTH = 1_000_000;
/** Scripts parsed again (`sh -c`, heredocs fed to shells, ...) may add up to this many characters in all. */
const MAX_PARSED_LENGTH = 4 * MAX_COMMAND_LENGTH;
/**
 * Past this many segments, or this much JSON, the rest are not looked at and the command is
 * unparsable (so a person looks): the result is stored in workflow history and must stay small.
 */
export const MAX_SEGMENTS = 500;
const MAX_RESULT_BYTES = 256 * 1024;
/** Wrappers unwrapped around one program (`env env env ... rm`); past it the program counts as computed. */
const MAX_WRAPPERS = 16;
/**
 * What a segment keeps, so that the result stays small: argv and wrapper argvs keep their first 40
 * words, each word its first 256 characters, and the text its first 500. Rules look no further: a
 * prefix has at most 32 words of at most 200 characters.
 */
export const KEPT_WORDS = 40;
export const KEPT_WORD_LENGTH = 256;
const KEPT_TEXT_LENGTH = 500;

// ---------------------------------------------------------------------------------------------
// The parser: initialised once, on first use, and reused (parsing is synchronous).

let parserReady: Promise<Parser> | undefined;

function loadParser(): Promise<Parser> {
  parserReady ??= (async () => {
    await Parser.init();
    // Read here, not by Language.load(path): its dynamic import() of fs fails under jest's CommonJS vm.
    const bash = await Language.load(await readFile(require.resolve('tree-sitter-bash/tree-sitter-bash.wasm')));
    const parser = new Parser();
    parser.setLanguage(bash);
    return parser;
  })().catch((error: unknown) => {
    // A failed load (a missing file) is not cached: the next call tries again.
    parserReady = undefined;
    throw error;
  });
  return parserReady;
}

export async function parseCommand(command: string): Promise<ParsedCommand> {
  const out = new Collector(await loadParser());
  if (command.length > MAX_COMMAND_LENGTH) {
    out.problems.push(`the command is ${command.length} characters long; at most ${MAX_COMMAND_LENGTH} are parsed`);
  } else {
    parseScript(command, { via: [], wrappers: [], depth: 0, stdin: UNKNOWN_STDIN }, out);
  }
  return out.result();
}

/**
 * The programs the command runs, in order of first appearance: wrappers (`sudo`, `timeout`) and the
 * programs they run, as written (`./build.sh` stays a path). Left out: shell builtins and keywords
 * (`cd`, `export`, `echo`, `printf`, `test`, `[`, `read`, `eval`, `exec`, `command`, ... see
 * SHELL_BUILTINS), functions the command defines, assignments, and programs whose name is only
 * known at run time. So `n=$(cat f); echo $((n+1)) > f` runs `cat` only.
 */
export async function programsRun(command: string): Promise<string[]> {
  return programsOf(await parseCommand(command));
}

/** programsRun for a command parsed already. */
export function programsOf(parsed: ParsedCommand): string[] {
  const functions = new Set(parsed.functions);
  const programs = new Set<string>();
  const add = (argv0: string | undefined) => {
    if (argv0 === undefined || argv0 === '' || SHELL_BUILTINS.has(argv0) || functions.has(argv0)) return;
    programs.add(argv0);
  };
  for (const segment of parsed.segments) {
    for (const wrapper of segment.wrappers ?? []) add(wrapper[0]);
    if (!segment.computed || segment.dynamicArgs?.[0] !== 0) add(segment.argv[0]);
  }
  return [...programs];
}

/** Bash builtins and keywords: they run no program of their own (what they run is a segment itself). */
export const SHELL_BUILTINS: ReadonlySet<string> = new Set(
  (
    '. : [ [[ alias bg bind break builtin caller cd command compgen complete compopt continue coproc declare dirs ' +
    'disown echo enable eval exec exit export false fc fg getopts hash help history jobs kill let local logout ' +
    'mapfile popd printf pushd pwd read readarray readonly return set shift shopt source suspend test time times ' +
    'trap true type typeset ulimit umask unalias unset wait'
  ).split(' '),
);

// ---------------------------------------------------------------------------------------------
// Collecting segments.

/** What a shell reading its script from standard input would read, when nothing redirects it. */
type Stdin = { kind: 'script'; script: ScriptText } | { kind: 'file'; file: Word } | { kind: 'unknown' };

/** A script to parse again; not exact when it holds expansions (its text keeps them as written). */
interface ScriptText {
  text: string;
  exact: boolean;
}

const UNKNOWN_STDIN: Stdin = { kind: 'unknown' };

/** Where a simple command sits: the wrappers around it, how deep in re-parsed scripts, its stdin. */
interface Layer {
  via: string[];
  wrappers: string[][];
  depth: number;
  stdin: Stdin;
  moreArgs?: boolean;
  /** Each node's parent by node id, kept while walking: Node.parent searches down from the root every time. */
  parents?: Map<number, Node>;
}

function parentOf(node: Node, at: Layer): Node | undefined {
  return at.parents?.get(node.id);
}

/** The simple command being judged: where segments go and the source text they show. */
interface Site {
  out: Collector;
  text: string;
}

class Collector {
  readonly segments: CommandSegment[] = [];
  readonly problems: string[] = [];
  readonly functions = new Set<string>();
  /** Characters parsed so far, nested scripts included. */
  parsedLength = 0;
  /** JSON size of the segments so far. */
  private bytes = 0;

  constructor(readonly parser: Parser) {}

  result(): ParsedCommand {
    return {
      segments: this.segments,
      ...(this.problems.length > 0 && { unparsable: [...new Set(this.problems)].join('; ') }),
      ...(this.functions.size > 0 && { functions: [...this.functions] }),
    };
  }

  /** Past the segment limit nothing more is looked at: the command is unparsable already. */
  full(): boolean {
    if (this.segments.length < MAX_SEGMENTS && this.bytes < MAX_RESULT_BYTES) return false;
    this.problems.push(`too much to list (more than ${MAX_SEGMENTS} simple commands or ${MAX_RESULT_BYTES / 1024} KiB)`);
    return true;
  }

  add(segment: CommandSegment): void {
    if (this.full()) return;
    this.segments.push(segment);
    this.bytes += JSON.stringify(segment).length;
  }

  hazard(text: string, hazard: string, at: Layer): void {
    this.add({ text: clip(text, KEPT_TEXT_LENGTH), argv: [], program: '', ...layerFields(at), hazard });
  }

  /** A redirection writing a file: a segment of its own, judged as a command no rule names. */
  write(text: string, target: Target, at: Layer): void {
    this.add({
      text: clip(text, KEPT_TEXT_LENGTH),
      argv: [],
      program: '',
      ...(target.known ? {} : { computed: 'the file it writes is only known at run time' }),
      ...layerFields(at),
      writes: clip(target.path, KEPT_WORD_LENGTH),
    });
  }
}

function layerFields(at: Layer): Pick<CommandSegment, 'via' | 'wrappers'> {
  return at.via.length > 0 ? { via: at.via, wrappers: at.wrappers.map(keptWords) } : {};
}

function keptWords(words: string[]): string[] {
  const kept = words.slice(0, KEPT_WORDS).map((word) => clip(word, KEPT_WORD_LENGTH));
  return words.length > KEPT_WORDS ? [...kept, `…(${words.length - KEPT_WORDS} more)`] : kept;
}

/** A word of a simple command: as written, and decoded when it is known before run time. */
interface Word {
  source: string;
  /** Undefined when only known at run time. */
  value?: string;
  /** The value, or the text with its expansions kept as written (what `sh -c "rm $x"` re-parses). */
  template: string;
}

type Extra = Pick<CommandSegment, 'computed' | 'hazard' | 'scriptFile' | 'scriptFileArg'>;

function emit(site: Site, words: Word[], at: Layer, extra: Extra = {}): void {
  const argv = words.map((word) => word.value ?? word.source);
  const dynamicArgs = words.flatMap((word, i) => (word.value === undefined ? [i] : []));
  const first = words[0];
  const computed = extra.computed ?? (first.value === undefined ? 'the program name is only known at run time' : undefined);
  site.out.add({
    text: clip(site.text, KEPT_TEXT_LENGTH),
    argv: keptWords(argv),
    program: clip(first.value === undefined ? first.source : baseName(first.value), KEPT_WORD_LENGTH),
    ...(computed !== undefined && { computed }),
    ...(dynamicArgs.length > 0 && { dynamicArgs: dynamicArgs.filter((i) => i < KEPT_WORDS) }),
    ...(at.moreArgs && { moreArgs: true as const }),
    ...layerFields(at),
    ...(extra.hazard !== undefined && { hazard: extra.hazard }),
    ...(extra.scriptFile !== undefined && { scriptFile: clip(extra.scriptFile, KEPT_WORD_LENGTH) }),
    ...(extra.scriptFileArg !== undefined && { scriptFileArg: extra.scriptFileArg }),
  });
}

/** `sh x.sh`, `. x.sh`: the file word at argv[index] is run as a script the rules cannot see. */
function scriptFileAt(words: Word[], index: number): Extra {
  return { scriptFile: words[index].value!, scriptFileArg: index };
}

export function baseName(path: string): string {
  const base = path.replace(/\/+$/, '').split('/').pop();
  return base === undefined || base === '' ? path : base;
}

// ---------------------------------------------------------------------------------------------
// Parsing a script and walking every node of it.

function parseScript(text: string, at: Layer, out: Collector): void {
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

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/**
 * Variables that make some program run another, or change which program a name runs (HOME,
 * XDG_CONFIG_HOME and ZDOTDIR move the startup files and git config a program reads).
 */
export const HAZARDOUS_VARIABLES =
  /^(PATH|BASH_CMDS|BASH_ALIASES|BASH_LOADABLES_PATH|LD_[A-Z_]+|DYLD_[A-Z_]+|BASH_ENV|ENV|ZDOTDIR|HOME|XDG_CONFIG_HOME|PROMPT_COMMAND|PS4|SHELLOPTS|BASHOPTS|BASH_FUNC_.*|PAGER|MANPAGER|GIT_PAGER|EDITOR|VISUAL|GIT_EDITOR|GIT_SEQUENCE_EDITOR|GIT_SSH|GIT_SSH_COMMAND|GIT_EXTERNAL_DIFF|GIT_ASKPASS|SSH_ASKPASS|GIT_EXEC_PATH|GIT_PROXY_COMMAND|GIT_CONFIG.*|NODE_OPTIONS|PERL5OPT|PERL5LIB|PYTHONPATH|PYTHONSTARTUP|RUBYOPT|LESSOPEN|LESSCLOSE)$/;

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

function partsOf(command: Node, parent: Node | undefined, depth = 0): { words: Word[]; redirects: Node[]; assignments: Node[] } {
  const words: Word[] = [];
  const redirects: Node[] = [];
  const assignments: Node[] = [];
  let previousEnd = -1;
  for (const child of command.namedChildren) {
    if (child.type === 'variable_assignment') assignments.push(child);
    else if (child.type.endsWith('_redirect')) redirects.push(child);
    else if (child.type !== 'comment') {
      const fields = wordsOf(child, depth);
      const gap = command.text.slice(previousEnd - command.startIndex, child.startIndex - command.startIndex);
      // `r\<newline>m` is one word, `rm`, though the tree splits it in two.
      if (previousEnd !== -1 && /^(\\\n)+$/.test(gap) && words.length > 0) words.push(joinWords(words.pop()!, gap, fields));
      else words.push(...fields);
      previousEnd = child.endIndex;
      continue;
    }
    previousEnd = -1;
  }
  // `rm x > out`: the redirects belong to the statement around the command.
  if (parent?.type === 'redirected_statement' && parent.childForFieldName('body')?.equals(command)) {
    redirects.push(...parent.namedChildren.filter((child) => child.type.endsWith('_redirect')));
  }
  return { words, redirects, assignments };
}

// ---------------------------------------------------------------------------------------------
// Redirections that write files.

/** A file written: decoded when literal, else its source text. */
interface Target {
  path: string;
  known: boolean;
}

/** Where output may go without writing a file. */
const NOT_FILES = new Set(['/dev/null', '/dev/stdout', '/dev/stderr']);

/**
 * The file a redirection writes (`>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>& FILE`), or undefined for
 * input (`<`, `<&`), a copy or close of a descriptor (`2>&1`, `>&2`, `>&-`, `>&3-`), a process
 * substitution (what it runs is a segment) and /dev/null, /dev/stdout, /dev/stderr.
 */
function fileWritten(redirect: Node): Target | undefined {
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

function targetOf(node: Node): Target {
  const word = wordOf(node);
  return word?.value !== undefined ? { path: word.value, known: true } : { path: node.text, known: false };
}

/** The statement a redirection belongs to, for the text a person sees: `git status > out`, `{ ...; } > f`. */
function statementOf(node: Node, at: Layer): Node {
  let statement = node;
  for (let parent = parentOf(statement, at); parent; parent = parentOf(statement, at)) {
    statement = parent;
    if (['redirected_statement', 'command', 'function_definition', 'test_command'].includes(parent.type)) break;
  }
  return statement;
}

/** Inside `[ ... ]` (not `[[ ... ]]`), where `>` is a redirection of the `[` command. */
function inSingleBracketTest(node: Node, at: Layer): boolean {
  let parent = parentOf(node, at);
  while (parent && ['binary_expression', 'unary_expression', 'parenthesized_expression', 'negated_expression'].includes(parent.type)) parent = parentOf(parent, at);
  return parent?.type === 'test_command' && parent.child(0)?.type === '[';
}

// ---------------------------------------------------------------------------------------------
// Standard input: what a shell that reads its script from stdin would run.

function stdinOf(command: Node, redirects: Node[], at: Layer): Stdin {
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
function heredocEndsEarly(redirect: Node): string | undefined {
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

/** The output of `echo words` or `printf text` with literal words, when nothing in it is interpreted. */
function printedBy(words: Word[]): string | undefined {
  const values = words.map((word) => word.value);
  if (values.some((value) => value === undefined)) return undefined;
  const [program, ...args] = values as string[];
  if (program === 'echo') {
    let i = 0;
    while (i < args.length && /^-[neE]+$/.test(args[i])) i++;
    const printed = args.slice(i).join(' ');
    // Some echos (dash's, bash with xpg_echo) interpret backslashes: leave those unfolded.
    return printed.includes('\\') ? undefined : printed;
  }
  if (program === 'printf' && args.length === 1 && !/[%\\]/.test(args[0])) return args[0];
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Words: decoding quoting, and telling literal words from those only known at run time.

interface Piece {
  text: string;
  /** Quoted or escaped: neither globbed nor split. */
  quoted: boolean;
  /** The output of an unquoted command substitution: split into words. */
  split?: boolean;
}

type Decoded = { pieces: Piece[]; template: string } | { pieces?: undefined; template: string };

/** Folding `$(echo rm)` looks this deep into nested substitutions. */
const MAX_FOLD_DEPTH = 8;

function wordsOf(node: Node, depth = 0): Word[] {
  const decoded = decodeNode(node, depth);
  const source = node.text;
  if (!decoded.pieces) return [{ source, template: decoded.template }];
  // What is left unquoted is globbed (`r?m`, `[r]m`, `*`) and brace-expanded (`{rm,-rf,x}`).
  const skeleton = decoded.pieces.map((piece) => (piece.quoted ? '_'.repeat(Math.max(piece.text.length, 1)) : piece.text)).join('');
  if (/[*?]|\[[^\]]*\]|\{[^{}]*(,|\.\.)[^{}]*\}|[@!+]\(/.test(skeleton)) return [{ source, template: decoded.template }];
  if (!decoded.pieces.some((piece) => piece.split)) {
    const value = decoded.pieces.map((piece) => piece.text).join('');
    return [{ source, value, template: value }];
  }
  return splitFields(decoded.pieces).map((value) => ({ source, value, template: value }));
}

function joinWords(before: Word, gap: string, after: Word[]): Word {
  const source = before.source + gap + after.map((word) => word.source).join('');
  const template = before.template + after.map((word) => word.template).join('');
  const known = after.length === 1 && before.value !== undefined && after[0].value !== undefined;
  return known ? { source, value: template, template } : { source, template };
}

function wordOf(node: Node): Word | undefined {
  const words = wordsOf(node);
  return words.length === 1 ? words[0] : undefined;
}

/** Word splitting of unquoted substitution output (default IFS). */
function splitFields(pieces: Piece[]): string[] {
  const fields: string[] = [];
  let current: string | undefined;
  for (const piece of pieces) {
    if (!piece.split) {
      current = (current ?? '') + piece.text;
      continue;
    }
    const parts = piece.text.split(/[ \t\n]+/);
    parts.forEach((part, i) => {
      if (i > 0 && current !== undefined) {
        fields.push(current);
        current = undefined;
      }
      if (part !== '') current = (current ?? '') + part;
    });
  }
  if (current !== undefined) fields.push(current);
  return fields;
}

function computed(node: Node): Decoded {
  return { template: node.text };
}

function decodeNode(node: Node, depth: number): Decoded {
  switch (node.type) {
    case 'command_name':
      return node.firstNamedChild ? decodeNode(node.firstNamedChild, depth) : computed(node);
    case 'word':
      return decodeUnquoted(node.text);
    case 'number':
      return node.namedChildCount === 0 ? decodeUnquoted(node.text) : computed(node);
    case 'raw_string': {
      const text = node.text.slice(1, -1);
      return { pieces: [{ text, quoted: true }], template: text };
    }
    case 'ansi_c_string': {
      const text = decodeAnsiC(node.text.slice(2, -1));
      return text === undefined ? computed(node) : { pieces: [{ text, quoted: true }], template: text };
    }
    case 'string':
      return decodeDoubleQuoted(node, depth);
    case 'translated_string':
      return node.firstNamedChild ? decodeNode(node.firstNamedChild, depth) : computed(node);
    case 'concatenation':
      return decodeConcatenation(node, depth);
    case 'command_substitution': {
      const printed = depth < MAX_FOLD_DEPTH ? foldSubstitution(node, depth + 1) : undefined;
      return printed === undefined ? computed(node) : { pieces: [{ text: printed, quoted: false, split: true }], template: printed };
    }
    default:
      // Expansions ($x, ${x}, $((..))), process substitutions, brace ranges, extglobs, arrays.
      return computed(node);
  }
}

function decodeConcatenation(node: Node, depth: number): Decoded {
  const pieces: Piece[] = [];
  let template = '';
  let known = true;
  let at = node.startIndex;
  for (const child of node.children) {
    // Pieces must tile the word: text the tree skipped is text we cannot vouch for.
    if (child.startIndex !== at) known = false;
    at = child.endIndex;
    const decoded = decodeNode(child, depth);
    template += decoded.template;
    if (decoded.pieces) pieces.push(...decoded.pieces);
    else known = false;
  }
  if (at !== node.endIndex) known = false;
  return known ? { pieces, template } : { template };
}

/** Unquoted text: a backslash quotes the next character; `$` or a backtick still here is an expansion. */
function decodeUnquoted(text: string): Decoded {
  const pieces: Piece[] = [];
  let plain = '';
  let value = '';
  let known = true;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '\\' && i + 1 < text.length) {
      i++;
      if (text[i] === '\n') continue;
      if (plain) pieces.push({ text: plain, quoted: false });
      plain = '';
      pieces.push({ text: text[i], quoted: true });
      value += text[i];
      continue;
    }
    if (char === '`' || (char === '$' && i + 1 < text.length)) known = false;
    if (char === '"' || char === "'") known = false;
    plain += char;
    value += char;
  }
  if (plain) pieces.push({ text: plain, quoted: false });
  return known ? { pieces, template: value } : { template: value };
}

/** "..." : literal between its expansions, and those folded when they are `$(echo literal)`. */
function decodeDoubleQuoted(node: Node, depth: number): Decoded {
  const open = node.startIndex + 1;
  const close = node.endIndex - 1;
  const source = node.text;
  let known = true;
  let literal = '';
  let template = '';
  let at = open;
  const addGap = (end: number) => {
    if (end <= at) return;
    const gap = decodeQuotedGap(source.slice(at - node.startIndex, end - node.startIndex));
    if (!gap.known) known = false;
    literal += gap.text;
    template += gap.text;
  };
  for (const child of node.namedChildren) {
    if (child.type === 'string_content') continue;
    addGap(child.startIndex);
    at = child.endIndex;
    const printed = child.type === 'command_substitution' && depth < MAX_FOLD_DEPTH ? foldSubstitution(child, depth + 1) : undefined;
    if (printed === undefined) {
      known = false;
      template += child.text;
    } else {
      literal += printed;
      template += printed;
    }
  }
  addGap(close);
  return known ? { pieces: [{ text: literal, quoted: true }], template } : { template };
}

/** Inside double quotes a backslash escapes only $ ` " \ and a newline. */
function decodeQuotedGap(text: string): { text: string; known: boolean } {
  let out = '';
  let known = true;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char === '\\' && i + 1 < text.length && '$`"\\\n'.includes(text[i + 1])) {
      i++;
      if (text[i] !== '\n') out += text[i];
      continue;
    }
    if (char === '`' || (char === '$' && i + 1 < text.length)) known = false;
    out += char;
  }
  return { text: out, known };
}

const ANSI_C_ESCAPES: Record<string, string> = {
  a: '\x07', b: '\b', e: '\x1b', E: '\x1b', f: '\f', n: '\n', r: '\r', t: '\t', v: '\v', '\\': '\\', "'": "'", '"': '"', '?': '?',
};

/** $'...' as bash decodes it; undefined for what it cannot be sure of (a bad code point). */
function decodeAnsiC(text: string): string | undefined {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (char !== '\\' || i + 1 >= text.length) {
      out += char;
      continue;
    }
    const next = text[++i];
    if (Object.hasOwn(ANSI_C_ESCAPES, next)) out += ANSI_C_ESCAPES[next];
    else if (/[0-7]/.test(next)) {
      const digits = /^[0-7]{1,3}/.exec(text.slice(i))![0];
      out += String.fromCharCode(parseInt(digits, 8) & 0xff);
      i += digits.length - 1;
    } else if (next === 'x' || next === 'u' || next === 'U') {
      const max = next === 'x' ? 2 : next === 'u' ? 4 : 8;
      const digits = new RegExp(`^[0-9a-fA-F]{1,${max}}`).exec(text.slice(i + 1))?.[0];
      if (!digits) {
        out += `\\${next}`;
        continue;
      }
      const code = parseInt(digits, 16);
      if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return undefined;
      out += String.fromCodePoint(code);
      i += digits.length;
    } else if (next === 'c' && i + 1 < text.length) {
      out += String.fromCharCode(text.charCodeAt(++i) & 0x1f);
    } else out += `\\${next}`;
  }
  // Bash ends the string at a NUL byte.
  const nul = out.indexOf('\0');
  return nul === -1 ? out : out.slice(0, nul);
}

/** `$(echo rm)`: the output of a literal echo or printf, which is all the program name depends on. */
function foldSubstitution(node: Node, depth: number): string | undefined {
  const statements = node.namedChildren.filter((child) => child.type !== 'comment');
  if (statements.length !== 1 || statements[0].type !== 'command') return undefined;
  const { words, redirects, assignments } = partsOf(statements[0], node, depth);
  if (redirects.length > 0 || assignments.length > 0) return undefined;
  return printedBy(words)?.replace(/\n+$/, '');
}

// ---------------------------------------------------------------------------------------------
// Judging a simple command: unwrapping wrappers until the program that runs.

function judge(words: Word[], at: Layer, site: Site): void {
  if (words.length === 0) return;
  const first = words[0];
  // After `time` the tree reads `{ rm x; }` and `! rm x` as plain words: they are the group and the negation.
  if (first.source === '{' || first.source === '}' || first.source === '!') {
    judge(words.slice(1), at, site);
    return;
  }
  if (first.value === undefined) {
    emit(site, words, at);
    return;
  }
  const name = baseName(first.value);
  if (at.via.length >= MAX_WRAPPERS) {
    emit(site, words, at, { computed: `more than ${MAX_WRAPPERS} wrappers` });
    return;
  }
  const special = SPECIAL_WRAPPERS.get(name);
  const options = OPTION_WRAPPERS.get(name);
  if (special) special(words, at, site);
  else if (options) unwrapWithOptions(words, options, at, site);
  else if (SHELLS.has(name)) judgeShell(words, at, site);
  else if (name === 'git') judgeGit(words, at, site);
  else emit(site, words, at);
}

/** Given no command these run a shell, which reads its commands from stdin (`sudo -s <<< 'rm x'`). */
const SHELL_WITHOUT_COMMAND = new Set(['sudo', 'doas', 'su', 'runuser', 'chroot', 'nsenter', 'unshare', 'ssh', 'script', 'sg', 'pkexec', 'setpriv']);

/** The wrapper `words[0]` runs `inner`: judge that, remembering the wrapper. */
function runInner(inner: Word[], words: Word[], at: Layer, site: Site, options: { moreArgs?: boolean; stdin?: Stdin } = {}): void {
  if (inner.length === 0) {
    if (SHELL_WITHOUT_COMMAND.has(baseName(words[0].value ?? ''))) runStdin(words, at, site);
    else emit(site, words, at);
    return;
  }
  judge(inner, { ...wrapped(words, at), stdin: options.stdin ?? at.stdin, moreArgs: options.moreArgs || at.moreArgs }, site);
}

function wrapped(words: Word[], at: Layer): Layer {
  return {
    ...at,
    via: [...at.via, baseName(words[0].value ?? words[0].source)],
    wrappers: [...at.wrappers, words.map((word) => word.value ?? word.source)],
  };
}

/** The wrapper `words[0]` runs a script: parse it again, one level deeper. */
function runScript(script: ScriptText, words: Word[], at: Layer, site: Site, stdin: Stdin = at.stdin, moreArgs = false): void {
  const name = baseName(words[0].value ?? words[0].source);
  if (at.depth >= MAX_SCRIPT_DEPTH) {
    site.out.problems.push(`scripts are nested more than ${MAX_SCRIPT_DEPTH} deep`);
    emit(site, words, at, { computed: `a script nested more than ${MAX_SCRIPT_DEPTH} deep` });
    return;
  }
  const before = site.out.segments.length;
  parseScript(script.text, { ...wrapped(words, at), depth: at.depth + 1, stdin, moreArgs }, site.out);
  if (!script.exact) emit(site, words, at, { computed: `${name} runs a script only known at run time` });
  else if (site.out.segments.length === before) emit(site, words, at);
}

function scriptOf(word: Word): ScriptText {
  return { text: word.template, exact: word.value !== undefined };
}

function joinedScript(words: Word[]): ScriptText {
  return { text: words.map((word) => word.template).join(' '), exact: words.every((word) => word.value !== undefined) };
}

interface WrapperOptions {
  /** Short options that take a value (`-n 5`, `-n5`). */
  short?: string;
  /** Long options that take a value (`--signal KILL`, `--signal=KILL`). */
  long?: string[];
  /** Options after which the wrapper runs no command (`ionice -p PID`, `command -v rm`). */
  noCommand?: string[];
  /** Words after the options and before the command (`timeout DURATION`, `chroot DIR`). */
  operands?: number;
  /** NAME=value words may come before the command (`sudo A=1 rm`). */
  assignments?: boolean;
}

/** Wrappers whose command follows their options (and operands). Unknown options count as flags. */
const OPTION_WRAPPERS = new Map<string, WrapperOptions>(Object.entries({
  nohup: {},
  nice: { short: 'n', long: ['--adjustment'] },
  timeout: { short: 'ks', long: ['--kill-after', '--signal'], operands: 1 },
  stdbuf: { short: 'ioe', long: ['--input', '--output', '--error'] },
  ionice: { short: 'cnpPu', long: ['--class', '--classdata'], noCommand: ['-p', '-P', '-u', '--pid', '--pgid', '--uid'] },
  setsid: {},
  chroot: { long: ['--userspec', '--groups'], operands: 1 },
  taskset: { noCommand: ['-p', '--pid'], operands: 1 },
  chrt: { short: 'TPD', long: ['--sched-runtime', '--sched-period', '--sched-deadline'], noCommand: ['-p', '--pid'], operands: 1 },
  time: { short: 'fo', long: ['--format', '--output'] },
  exec: { short: 'a' },
  builtin: {},
  coproc: {},
  command: { noCommand: ['-v', '-V'] },
  sudo: {
    short: 'ughpCDrtTUR',
    long: ['--user', '--group', '--host', '--prompt', '--close-from', '--chdir', '--role', '--type', '--command-timeout', '--other-user', '--chroot'],
    noCommand: ['-e', '--edit', '-K', '--remove-timestamp', '-v', '--validate', '-V', '--version', '-l', '--list', '--help'],
    assignments: true,
  },
  doas: { short: 'uC' },
  pkexec: { long: ['--user'] },
  unbuffer: {},
  torsocks: { short: 'uapP' },
  proxychains: { short: 'f' },
  proxychains4: { short: 'f' },
  fakeroot: { short: 'lsi', long: ['--lib', '--faked'] },
  caffeinate: { short: 'wt' },
  strace: { short: 'eopsuEPabIXSO' },
  ltrace: { short: 'eopsunaAlD' },
  valgrind: {},
  catchsegv: {},
  chronic: {},
  ifne: {},
  'dbus-run-session': {},
  'xvfb-run': { short: 'nsfepw' },
  nsenter: { short: 'tSG' },
  unshare: { short: 'SGRw' },
  prlimit: { noCommand: ['-p', '--pid'] },
  'systemd-run': {
    short: 'pEuMH',
    long: ['--unit', '--property', '--description', '--slice', '--uid', '--gid', '--working-directory', '--setenv', '--machine', '--host', '--nice', '--service-type'],
  },
  firejail: {},
  setpriv: {},
  toybox: {},
}));

/**
 * Wrappers that run their command with other privileges or elsewhere: for these the wrapper itself
 * must be allowed too (`sudo cat /etc/shadow` is not allowed by `cat: allow` alone).
 */
export const PRIVILEGED_WRAPPERS: ReadonlySet<string> = new Set([
  'sudo', 'doas', 'su', 'runuser', 'pkexec', 'sg', 'chroot', 'nsenter', 'unshare', 'setpriv', 'systemd-run', 'ssh',
]);

interface OptionScan {
  /** Index of the first word after the options, or undefined when the wrapper runs no command. */
  index?: number;
  /** The valued options met, by name as written (`-c`, `--command`). */
  values: Map<string, Word>;
}

function scanOptions(words: Word[], spec: WrapperOptions, start = 1): OptionScan {
  const values = new Map<string, Word>();
  const noCommand = new Set(spec.noCommand ?? []);
  let i = start;
  while (i < words.length) {
    const word = words[i].value;
    if (word === undefined) break;
    if (word === '--') {
      i++;
      break;
    }
    if (!word.startsWith('-') || word === '-') break;
    if (word.startsWith('--')) {
      const eq = word.indexOf('=');
      const name = eq === -1 ? word : word.slice(0, eq);
      if (noCommand.has(name)) return { values };
      if (eq !== -1) values.set(name, { source: words[i].source, value: word.slice(eq + 1), template: word.slice(eq + 1) });
      else if (spec.long?.includes(name) && i + 1 < words.length) values.set(name, words[++i]);
      i++;
      continue;
    }
    for (let k = 1; k < word.length; k++) {
      const letter = word[k];
      if (noCommand.has(`-${letter}`)) return { values };
      if (spec.short?.includes(letter)) {
        const rest = word.slice(k + 1);
        if (rest) values.set(`-${letter}`, { source: words[i].source, value: rest, template: rest });
        else if (i + 1 < words.length) values.set(`-${letter}`, words[++i]);
        break;
      }
    }
    i++;
  }
  if (spec.assignments) while (i < words.length && isAssignment(words[i])) i++;
  return { index: Math.min(i + (spec.operands ?? 0), words.length), values };
}

/** env and sudo take any NAME=value before the command, names bash would refuse included (`BASH_FUNC_f%%=`). */
function isAssignment(word: Word): boolean {
  return word.value !== undefined && /^[^=-][^=]*=/.test(word.value);
}

function unwrapWithOptions(words: Word[], spec: WrapperOptions, at: Layer, site: Site): void {
  const { index } = scanOptions(words, spec);
  if (index === undefined) {
    emit(site, words, at);
    return;
  }
  if (spec.assignments) flagAssignments(words.slice(1, index), at, site);
  runInner(words.slice(index), words, at, site);
}

function flagAssignments(words: Word[], at: Layer, site: Site): void {
  for (const word of words) {
    if (!isAssignment(word)) continue;
    const eq = word.value!.indexOf('=');
    flagVariable(word.value!.slice(0, eq), word.source, { text: word.value!.slice(eq + 1), exact: true }, at, site.out);
  }
}

/** Variables whose value is a command line that some program hands to a shell. */
const COMMAND_VARIABLES =
  /^(PAGER|MANPAGER|GIT_PAGER|EDITOR|VISUAL|GIT_EDITOR|GIT_SEQUENCE_EDITOR|GIT_SSH_COMMAND|GIT_ASKPASS|SSH_ASKPASS|GIT_EXTERNAL_DIFF|GIT_PROXY_COMMAND|PROMPT_COMMAND|LESSOPEN|LESSCLOSE)$/;

/**
 * `LD_PRELOAD=x ls` is a hazard. `PAGER='less -R' git log` is not, when the value is literal: the
 * command in it is judged like any other (so `PAGER='rm x'` meets `rm: deny`).
 */
function flagVariable(assigned: string, text: string, value: ScriptText, at: Layer, out: Collector): void {
  const name = assigned.replace(/\[.*$/s, ''); // BASH_CMDS[ls]=/bin/rm
  if (!HAZARDOUS_VARIABLES.test(name)) return;
  const runsValue = COMMAND_VARIABLES.test(name);
  if (!runsValue || !value.exact) out.hazard(text, `sets ${name}, which decides what programs run`, at);
  if (runsValue) judgeCommandValue(name, value, at, out);
  // env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls: a function bash imports; its body is judged.
  if (name.startsWith('BASH_FUNC_')) judgeCommandValue(name, { text: `f${value.text}`, exact: value.exact }, at, out);
}

/** A command line kept in a variable or in git config: parsed like `sh -c` (a hazard already asks). */
function judgeCommandValue(label: string, value: ScriptText, at: Layer, out: Collector): void {
  if (at.depth >= MAX_SCRIPT_DEPTH || value.text.trim() === '') return;
  const script = value.text.replace(/^\s*\|/, '');
  // The label is no program: its wrapper argv is empty, so no rule and no programsRun sees it.
  parseScript(script, { via: [...at.via, label], wrappers: [...at.wrappers, []], depth: at.depth + 1, stdin: UNKNOWN_STDIN }, out);
}

type Special = (words: Word[], at: Layer, site: Site) => void;

const SPECIAL_WRAPPERS = new Map<string, Special>(Object.entries({
  env: judgeEnv,
  xargs: judgeXargs,
  find: judgeFind,
  busybox: (words, at, site) => {
    const applet = words[1]?.value;
    if (applet === undefined || applet.startsWith('-')) emit(site, words, at);
    else runInner(words.slice(1), words, at, site);
  },
  eval: (words, at, site) => {
    const args = words.slice(words[1]?.value === '--' ? 2 : 1);
    if (args.length === 0) emit(site, words, at);
    else runScript(joinedScript(args), words, at, site);
  },
  trap: (words, at, site) => {
    const start = words[1]?.value === '--' ? 2 : 1;
    const action = words[start];
    // `trap ACTION SIGNAL...`; `trap - SIG`, `trap '' SIG`, `trap -p` run nothing.
    if (words.length > start + 1 && action.value !== '' && action.value !== '-' && !action.value?.startsWith('-')) {
      runScript(scriptOf(action), words, at, site);
    } else emit(site, words, at);
  },
  // `hash -p /bin/rm ls` makes `ls` run rm; `enable -f lib.so name` loads a builtin from a file.
  hash: (words, at, site) => emit(site, words, at, words.some((word) => /^-[a-z]*p/.test(word.value ?? '')) ? { hazard: 'hash -p makes a name run another program' } : {}),
  enable: (words, at, site) => emit(site, words, at, words.some((word) => /^-[a-z]*f/.test(word.value ?? '')) ? { hazard: 'enable -f loads a builtin from a file' } : {}),
  // `shopt -s expand_aliases; alias r=rm` makes `r` run rm: the value is judged as a command.
  alias: (words, at, site) => {
    const definitions = words.slice(1).filter((word) => word.template.includes('=') && !word.template.startsWith('-'));
    if (definitions.length === 0) emit(site, words, at);
    for (const word of definitions) {
      const value = word.template.slice(word.template.indexOf('=') + 1);
      runScript({ text: value, exact: word.value !== undefined }, words, at, site);
    }
  },
  source: judgeSource,
  '.': judgeSource,
  parallel: (words, at, site) => {
    // parallel [options] command ::: args: the command is run by a shell, with arguments added.
    const { index } = scanOptions(words, { short: 'jSXNnLlIaEdPs', long: ['--jobs', '--sshlogin', '--arg-file', '--delimiter', '--max-args', '--max-procs', '--joblog', '--results', '--timeout', '--tmpdir', '--workdir'] });
    const start = index ?? words.length;
    let end = start;
    while (end < words.length && !/^::::?\+?$/.test(words[end].value ?? '')) end++;
    const inner = words.slice(start, end);
    if (inner.length === 0) emit(site, words, at, { computed: 'parallel runs commands from its input' });
    else runScript(joinedScript(inner), words, at, site, UNKNOWN_STDIN, true);
  },
  at: judgeAt,
  batch: judgeAt,
  su: judgeSu,
  runuser: judgeSu,
  script: (words, at, site) => {
    const { values } = scanOptions(words, { short: 'cEIOBTm', long: ['--command', '--echo', '--log-in', '--log-out', '--log-io', '--log-timing', '--logging-format'] });
    const command = values.get('-c') ?? values.get('--command');
    if (command) runScript(scriptOf(command), words, at, site);
    else runStdin(words, at, site);
  },
  flock: (words, at, site) => {
    // flock [options] FILE -c COMMAND | flock [options] FILE PROGRAM ARGS | flock [options] FD
    const spec: WrapperOptions = { short: 'wEc', long: ['--timeout', '--wait', '--conflict-exit-code', '--command'] };
    const before = scanOptions(words, spec);
    const file = before.index ?? words.length;
    const after = before.values.has('-c') || before.values.has('--command') ? before : scanOptions(words, spec, file + 1);
    const command = after.values.get('-c') ?? after.values.get('--command');
    if (command) runScript(scriptOf(command), words, at, site);
    else runInner(words.slice(Math.min(file + 1, words.length)), words, at, site);
  },
  ssh: (words, at, site) => {
    const { index } = scanOptions(words, { short: 'BbcDEeFIiJLlmOoPpQRSWw' });
    judgeSshOptions(words.slice(1, index), at, site);
    // The words after the destination are joined and run by the remote user's shell.
    let inner = words.slice(Math.min((index ?? words.length) + 1, words.length));
    if (inner[0]?.value === '--') inner = inner.slice(1);
    if (inner.length > 0) runScript(joinedScript(inner), words, at, site, UNKNOWN_STDIN);
    else if (words.slice(1, index).some((word) => /^-[^-]*N/.test(word.value ?? ''))) emit(site, words, at);
    else runStdin(words, at, site);
  },
  rsync: (words, at, site) => {
    // rsync -e 'ssh -p 22' / --rsh=CMD runs CMD here to reach the other side.
    emit(site, words, at);
    for (let i = 1; i < words.length; i++) {
      const value = words[i].value ?? '';
      const attached = /^(?:--rsh=|-e)(.+)$/s.exec(value);
      const shell = attached ? { text: attached[1], exact: true } : (value === '-e' || value === '--rsh') && words[i + 1] ? scriptOf(words[i + 1]) : undefined;
      if (shell) judgeCommandValue('rsync -e', shell, at, site.out);
    }
  },
  watch: (words, at, site) => {
    const { index } = scanOptions(words, { short: 'nq', long: ['--interval', '--equexit'] });
    const inner = words.slice(index ?? words.length);
    // watch hands its words to `sh -c` joined by spaces, unless told to exec them.
    if (words.slice(1, index).some((word) => word.value === '-x' || word.value === '--exec')) runInner(inner, words, at, site);
    else if (inner.length > 0) runScript(joinedScript(inner), words, at, site);
    else emit(site, words, at);
  },
  sg: (words, at, site) => {
    let i = words[1]?.value === '-' ? 2 : 1;
    i++; // the group
    if (words[i]?.value === '-c') i++;
    const inner = words.slice(i);
    if (inner.length > 0) runScript(joinedScript(inner), words, at, site);
    else runStdin(words, at, site);
  },
}));

/** `ssh -o ProxyCommand='...'` runs that command here, before any connection. */
function judgeSshOptions(options: Word[], at: Layer, site: Site): void {
  for (let i = 0; i < options.length; i++) {
    const value = options[i].value ?? '';
    const setting = value === '-o' ? options[i + 1]?.value : value.startsWith('-o') ? value.slice(2) : undefined;
    const command = /^(ProxyCommand|LocalCommand|KnownHostsCommand)\s*[= ]\s*(.*)$/is.exec(setting ?? '');
    if (command) judgeCommandValue(`ssh -o ${command[1]}`, { text: command[2], exact: true }, at, site.out);
    else if (value === '-o' && options[i + 1]?.value === undefined) site.out.hazard(options[i + 1]?.source ?? value, 'an ssh option only known at run time', at);
  }
}

function judgeEnv(words: Word[], at: Layer, site: Site): void {
  let i = 1;
  while (i < words.length) {
    const word = words[i].value;
    if (word === undefined) break;
    if (word === '--') {
      i++;
      break;
    }
    const split = splitStringOption(words, i);
    if (split) {
      // env -S 'rm -rf x': the string is split into words that take its place.
      runInner([...splitEnvString(split.text, split.known), ...words.slice(split.next)], words, at, site);
      return;
    }
    if (/^-[uC]$/.test(word) || word === '--unset' || word === '--chdir') i += 2;
    else if (word.startsWith('-') && word !== '-') i++;
    else if (word === '-' || isAssignment(words[i])) {
      if (word !== '-') flagAssignments([words[i]], at, site);
      i++;
    } else break;
  }
  runInner(words.slice(i), words, at, site);
}

function splitStringOption(words: Word[], i: number): { text: string; known: boolean; next: number } | undefined {
  const word = words[i].value ?? '';
  if (word === '-S' || word === '--split-string') {
    const string = words[i + 1];
    return { text: string?.template ?? '', known: string?.value !== undefined, next: i + 2 };
  }
  if (word.startsWith('--split-string=')) return { text: word.slice('--split-string='.length), known: true, next: i + 1 };
  if (/^-S./s.test(word)) return { text: word.slice(2), known: true, next: i + 1 };
  return undefined;
}

/** env -S's splitting: whitespace, quotes and backslashes; a `$` makes the words unknown. */
function splitEnvString(text: string, known: boolean): Word[] {
  if (!known || text.includes('$')) return [{ source: text, template: text }];
  const words: Word[] = [];
  const pattern = /'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)|(\S)|(\s+)/gs;
  let current: string | undefined;
  for (const match of text.matchAll(pattern)) {
    if (match[5] !== undefined) {
      if (current !== undefined) words.push({ source: current, value: current, template: current });
      current = undefined;
    } else current = (current ?? '') + (match[1] ?? match[2]?.replace(/\\(.)/g, '$1') ?? match[3] ?? match[4]);
  }
  if (current !== undefined) words.push({ source: current, value: current, template: current });
  return words;
}

function judgeXargs(words: Word[], at: Layer, site: Site): void {
  const { index, values } = scanOptions(words, {
    short: 'adEILnPs',
    long: ['--arg-file', '--delimiter', '--max-args', '--max-procs', '--max-chars', '--process-slot-var'],
  });
  const options = words.slice(1, index);
  // -I R / -iR / --replace[=R]: input lines replace R inside the words, which are then unknown.
  let replace = values.get('-I')?.value;
  for (const option of options) {
    const v = option.value ?? '';
    if (v === '-i' || v === '--replace') replace ??= '{}';
    else if (/^-i./.test(v)) replace ??= v.slice(2);
    else if (v.startsWith('--replace=')) replace ??= v.slice('--replace='.length);
  }
  let inner = words.slice(index ?? words.length);
  if (inner.length === 0) inner = [{ source: 'echo', value: 'echo', template: 'echo' }];
  if (replace) inner = inner.map((word) => (word.value?.includes(replace) ? { source: word.source, template: word.template } : word));
  runInner(inner, words, at, site, { moreArgs: !replace, stdin: UNKNOWN_STDIN });
}

function judgeFind(words: Word[], at: Layer, site: Site): void {
  // find is a program of its own (-delete, -fprint) as well as the runner of its -exec commands.
  emit(site, words, at);
  for (let i = 1; i < words.length; i++) {
    if (!['-exec', '-execdir', '-ok', '-okdir'].includes(words[i].value ?? '')) continue;
    const start = i + 1;
    let end = start;
    while (end < words.length && words[end].value !== ';' && !(words[end].value === '+' && words[end - 1]?.value === '{}')) end++;
    // find puts each path where `{}` is written: those words are only known at run time.
    const inner = words.slice(start, end).map((word) => (word.value?.includes('{}') ? { source: word.source, template: word.template } : word));
    runInner(inner, words, at, site, { moreArgs: words[end]?.value === '+', stdin: UNKNOWN_STDIN });
    i = end;
  }
}

/** `source FILE` runs a file like `sh FILE` (a script file the rules cannot see into); from /dev/stdin or `<(...)` it runs what it is fed. */
function judgeSource(words: Word[], at: Layer, site: Site): void {
  const file = words[1];
  if (file === undefined) emit(site, words, at);
  else if (isStdinPath(file)) runStdin(words, at, site);
  else if (file.value === undefined) emit(site, words, at, { computed: `${words[0].value} runs a script only known at run time` });
  else emit(site, words, at, scriptFileAt(words, 1));
}

function isStdinPath(word: Word): boolean {
  return word.value === '/dev/stdin' || word.value === '/dev/fd/0' || word.value === '/proc/self/fd/0';
}

/** at and batch read the commands they schedule from stdin (or -f FILE). */
function judgeAt(words: Word[], at: Layer, site: Site): void {
  const { values, index } = scanOptions(words, { short: 'fqtm', noCommand: ['-l', '-r', '-d', '-c', '-V'] });
  const file = values.get('-f');
  if (index === undefined) emit(site, words, at);
  else if (file?.value !== undefined) emit(site, words, at, { scriptFile: file.value });
  else if (file) emit(site, words, at, { computed: `${baseName(words[0].value ?? '')} runs a script file only known at run time` });
  else runStdin(words, at, site);
}

/**
 * A program that runs the script on its stdin: a literal heredoc is judged, a file (`< x.sh`) is a
 * script file the rules cannot see into, anything else is computed.
 */
function runStdin(words: Word[], at: Layer, site: Site): void {
  const stdin = at.stdin;
  const name = baseName(words[0].value ?? '');
  if (stdin.kind === 'script') runScript(stdin.script, words, at, site, UNKNOWN_STDIN);
  // `bash < x.sh` runs the file as `bash x.sh` does, but no rule can name it: it is not a word of argv.
  else if (stdin.kind === 'file' && stdin.file.value !== undefined) emit(site, words, at, { scriptFile: stdin.file.value });
  else if (stdin.kind === 'file') emit(site, words, at, { computed: `${name} reads its script from a file only known at run time (${stdin.file.source})` });
  else emit(site, words, at, { computed: `${name} reads its script from standard input` });
}

function judgeSu(words: Word[], at: Layer, site: Site): void {
  // su and runuser take their options anywhere: look for -c among all the words.
  for (let i = 1; i < words.length; i++) {
    const value = words[i].value ?? '';
    if ((value === '-c' || value === '--command' || value === '--session-command') && i + 1 < words.length) {
      runScript(scriptOf(words[i + 1]), words, at, site);
      return;
    }
    const attached = /^(?:--command=|--session-command=|-c)(.+)$/s.exec(value);
    if (attached) {
      runScript({ text: attached[1], exact: true }, words, at, site);
      return;
    }
  }
  // runuser -u USER -- program args
  if (baseName(words[0].value ?? '') === 'runuser' && words.some((word) => word.value === '-u' || word.value?.startsWith('--user'))) {
    const { index } = scanOptions(words, { short: 'ugGsw', long: ['--user', '--group', '--supp-group', '--shell', '--whitelist-environment'] });
    runInner(words.slice(index ?? words.length), words, at, site);
    return;
  }
  runStdin(words, at, site);
}

const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'fish', 'yash', 'posh', 'rbash']);

function judgeShell(words: Word[], at: Layer, site: Site): void {
  const name = baseName(words[0].value ?? '');
  let commandMode = false;
  let readsStdin = false;
  let i = 1;
  for (; i < words.length; i++) {
    const word = words[i].value;
    if (word === undefined) break;
    if (word === '--' || word === '-') {
      i++;
      break;
    }
    if (word.startsWith('--')) {
      if (word === '--command') commandMode = true;
      else if (word.startsWith('--command=')) {
        runScript({ text: word.slice('--command='.length), exact: true }, words, at, site);
        return;
      } else if (word === '--rcfile' || word === '--init-file') {
        // An interactive bash runs this file first: a script the rules cannot see into.
        const file = words[++i];
        if (file?.value !== undefined) emit(site, words, at, scriptFileAt(words, i));
        else if (file) emit(site, words, at, { computed: `${name} runs a startup file only known at run time` });
      }
      continue;
    }
    if (!/^[-+]/.test(word)) break;
    for (const letter of word.slice(1)) {
      if (letter === 'c') commandMode = true;
      if (letter === 's') readsStdin = true;
      if (letter === 'o' || letter === 'O') {
        i++;
        break;
      }
    }
  }
  if (commandMode) {
    if (i < words.length) runScript(scriptOf(words[i]), words, at, site, at.stdin);
    else emit(site, words, at, at.moreArgs ? { computed: `the script ${name} -c runs comes from its input` } : {});
    return;
  }
  // `bash script.sh` runs a file the rules cannot see into; `bash <(curl ...)` runs what it is fed.
  if (i < words.length && !readsStdin && !isStdinPath(words[i])) {
    emit(site, words, at, words[i].value === undefined ? { computed: `${name} runs a script file only known at run time` } : scriptFileAt(words, i));
    return;
  }
  runStdin(words, at, site);
}

/** Global options that take a separate value (`git -C dir`); others come as --opt=value or alone. */
const GIT_VALUED_OPTIONS = new Set(['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--config-env', '--super-prefix', '--list-cmds', '--attr-source']);

/** Config that makes git run a command (aliases starting with !, pagers, editors, hooks, helpers, ...). */
export const GIT_COMMAND_CONFIG =
  /^(alias\.|core\.(pager|editor|sshcommand|fsmonitor|hookspath|gitproxy|askpass|alternaterefscommand|worktree)$|pager\.|diff\.|difftool\.|mergetool\.|merge\.|filter\.|credential|gpg\.|sequence\.editor|uploadpack\.|receive\.|remote\.|protocol\.|include\.|includeif\.|web\.|browser\.|man\.|instaweb\.|sendemail\.|http\.|ssh\.|submodule\.|url\.|safe\.)/i;

/** Config whose value is a command line git hands to a shell (`!` marks one for aliases and helpers). */
const GIT_COMMAND_VALUED =
  /^(core\.(pager|editor|sshcommand|askpass|gitproxy|fsmonitor|alternaterefscommand)|sequence\.editor|pager\..+|diff\.external|diff\..+\.(textconv|command)|difftool\..+\.cmd|mergetool\..+\.cmd|merge\..+\.driver|filter\..+\.(clean|smudge|process)|gpg\.(.+\.)?program|uploadpack\.packobjectshook)$/i;

function gitConfigCommand(setting: string): string | undefined {
  const eq = setting.indexOf('=');
  if (eq === -1) return undefined;
  const key = setting.slice(0, eq);
  const value = setting.slice(eq + 1);
  if (/^(alias\.|credential\.)/i.test(key)) return value.startsWith('!') ? value.slice(1) : undefined;
  return GIT_COMMAND_VALUED.test(key) && !/^(true|false)$/i.test(value) ? value : undefined;
}

/** `git -C dir -c k=v --no-pager push` is judged as `git push`. */
function judgeGit(words: Word[], at: Layer, site: Site): void {
  const hazards: string[] = [];
  let i = 1;
  while (i < words.length) {
    const word = words[i].value;
    if (word === undefined || !word.startsWith('-')) break;
    const name = word.includes('=') ? word.slice(0, word.indexOf('=')) : word;
    const value = word.includes('=') && word.startsWith('--') ? word.slice(word.indexOf('=') + 1) : GIT_VALUED_OPTIONS.has(word) ? words[i + 1]?.value : undefined;
    if (name === '-c' && (value === undefined || GIT_COMMAND_CONFIG.test(value.split('=')[0]))) {
      // A literal command in the config is judged itself; other config that runs things needs a person.
      const command = value === undefined ? undefined : gitConfigCommand(value);
      if (command !== undefined) judgeCommandValue(`git -c ${value!.split('=')[0]}`, { text: command, exact: true }, at, site.out);
      else hazards.push(`git -c ${value ?? words[i + 1]?.source ?? ''}`);
    }
    if (name === '--config-env' || name === '--exec-path') hazards.push(`git ${words[i].source}`);
    i += GIT_VALUED_OPTIONS.has(word) ? 2 : 1;
  }
  const normalized = [words[0], ...words.slice(Math.min(i, words.length))];
  const hazard = hazards.length > 0 ? `${hazards.join(', ')}: git config that can run commands` : undefined;
  emit(site, normalized, at, hazard ? { hazard } : {});
}
