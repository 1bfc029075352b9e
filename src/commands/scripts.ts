/** Scripts a wrapper runs (`sh -c`, `eval`, a command line in a variable, stdin): parsed again, one level deeper. */
import { baseName, emit, MAX_SCRIPT_DEPTH, UNKNOWN_STDIN, type Collector, type Layer, type ScriptText, type Site, type Stdin, type Word } from './segments';

export function wrapped(words: Word[], at: Layer): Layer {
  return {
    ...at,
    via: [...at.via, baseName(words[0].value ?? words[0].source)],
    wrappers: [...at.wrappers, words.map((word) => word.value ?? word.source)],
  };
}

/** The wrapper `words[0]` runs a script: parse it again, one level deeper. */
export function runScript(script: ScriptText, words: Word[], at: Layer, site: Site, stdin: Stdin = at.stdin, moreArgs = false): void {
  const name = baseName(words[0].value ?? words[0].source);
  if (at.depth >= MAX_SCRIPT_DEPTH) {
    site.out.problems.push(`scripts are nested more than ${MAX_SCRIPT_DEPTH} deep`);
    emit(site, words, at, { computed: `a script nested more than ${MAX_SCRIPT_DEPTH} deep` });
    return;
  }
  const before = site.out.segments.length;
  site.out.parseScript(script.text, { ...wrapped(words, at), depth: at.depth + 1, stdin, moreArgs });
  if (!script.exact) emit(site, words, at, { computed: `${name} runs a script only known at run time` });
  else if (site.out.segments.length === before) emit(site, words, at);
}

export function scriptOf(word: Word): ScriptText {
  return { text: word.template, exact: word.value !== undefined };
}

export function joinedScript(words: Word[]): ScriptText {
  return { text: words.map((word) => word.template).join(' '), exact: words.every((word) => word.value !== undefined) };
}

/** A command line kept in a variable or in git config: parsed like `sh -c` (a hazard already asks). */
export function judgeCommandValue(label: string, value: ScriptText, at: Layer, out: Collector): void {
  if (at.depth >= MAX_SCRIPT_DEPTH || value.text.trim() === '') return;
  const script = value.text.replace(/^\s*\|/, '');
  // The label is no program: its wrapper argv is empty, so no rule and no programsRun sees it.
  out.parseScript(script, { via: [...at.via, label], wrappers: [...at.wrappers, []], depth: at.depth + 1, stdin: UNKNOWN_STDIN });
}

export function isStdinPath(word: Word): boolean {
  return word.value === '/dev/stdin' || word.value === '/dev/fd/0' || word.value === '/proc/self/fd/0';
}

/**
 * A program that runs the script on its stdin: a literal heredoc is judged, a file (`< x.sh`) is a
 * script file the rules cannot see into, anything else is computed.
 */
export function runStdin(words: Word[], at: Layer, site: Site): void {
  const stdin = at.stdin;
  const name = baseName(words[0].value ?? '');
  if (stdin.kind === 'script') runScript(stdin.script, words, at, site, UNKNOWN_STDIN);
  // `bash < x.sh` runs the file as `bash x.sh` does, but no rule can name it: it is not a word of argv.
  else if (stdin.kind === 'file' && stdin.file.value !== undefined) emit(site, words, at, { scriptFile: stdin.file.value });
  else if (stdin.kind === 'file') emit(site, words, at, { computed: `${name} reads its script from a file only known at run time (${stdin.file.source})` });
  else emit(site, words, at, { computed: `${name} reads its script from standard input` });
}
