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
 * The parts: segments.ts (the result and its collector), walk.ts (the tree), words.ts (quoting),
 * redirects.ts and stdin.ts, wrappers.ts (unwrapping, with scripts.ts, variables.ts, shells.ts, ...).
 */

import type { Parser } from 'web-tree-sitter';
import { treeSitterParser } from '../tree-sitter-parsers';
import { Collector, MAX_COMMAND_LENGTH, UNKNOWN_STDIN, type ParsedCommand } from './segments';
import { parseScript } from './walk';

export { baseName, KEPT_WORD_LENGTH, KEPT_WORDS, MAX_COMMAND_LENGTH, MAX_SCRIPT_DEPTH, MAX_SEGMENTS, type CommandSegment, type ParsedCommand } from './segments';
export { PRIVILEGED_WRAPPERS } from './wrapper-options';
export { HAZARDOUS_VARIABLES } from './variables';
export { GIT_COMMAND_CONFIG } from './git-options';

// ---------------------------------------------------------------------------------------------
// The parser: initialised once, on first use, and reused (parsing is synchronous).

/** The bash parser, loaded once per process: preflight reads trees with it too. */
export function loadParser(): Promise<Parser> {
  return treeSitterParser('tree-sitter-bash/tree-sitter-bash.wasm');
}

export async function parseCommand(command: string): Promise<ParsedCommand> {
  const out = new Collector(await loadParser(), parseScript);
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
