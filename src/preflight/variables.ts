/**
 * The environment variables a shell command reads, from the bash grammar the command rules parse
 * with (tree-sitter-bash): `$NAME` and `${NAME}` outside single quotes and quoted heredocs, not
 * `${NAME:-default}`, `${#NAME}` or `${!NAME}`, and not the names the command sets itself
 * (assignments, `export`/`local`, `for NAME`, `read NAME`, `${NAME:=x}`, ...). Upper-case names
 * only: the convention for the environment. The scripts of `sh -c '...'` are not looked into.
 */
import type { Node } from 'web-tree-sitter';
import { loadParser } from '../commands/parse';

/** Operators after the name that need nothing set: `${A-x}`, `${A:-x}`, `${A+x}`, `${A=x}`, ... */
const DEFAULTED = new Set(['-', ':-', '+', ':+', '=', ':=']);
/** Builtins whose name arguments they set. */
const SETTERS = new Set(['read', 'mapfile', 'readarray', 'getopts', 'printf']);
/** Set by the shell itself, never taken from the environment. */
const SHELL_SET = new Set(
  ('BASH BASHOPTS BASHPID BASH_ARGC BASH_ARGV BASH_COMMAND BASH_LINENO BASH_REMATCH BASH_SOURCE BASH_SUBSHELL BASH_VERSINFO BASH_VERSION ' +
    'COLUMNS DIRSTACK EPOCHREALTIME EPOCHSECONDS EUID FUNCNAME GROUPS HISTCMD HOSTNAME HOSTTYPE IFS LINENO LINES MACHTYPE OLDPWD ' +
    'OPTARG OPTERR OPTIND OSTYPE PIPESTATUS PPID PS1 PS2 PS4 PWD RANDOM REPLY SECONDS SHELLOPTS SHLVL SRANDOM UID').split(' '),
);
const ENVIRONMENT_NAME = /^[A-Z][A-Z0-9_]*$/;

export interface VariableUse {
  /** Read and not set by the command (nor by the shell). */
  read: string[];
  /** Assigned anywhere in the command. */
  set: Set<string>;
}

export async function variablesOf(command: string): Promise<VariableUse> {
  const tree = (await loadParser()).parse(command);
  if (!tree) return { read: [], set: new Set() };
  try {
    const read = new Set<string>();
    const set = new Set<string>();
    const stack: Node[] = [tree.rootNode];
    while (stack.length > 0) {
      const node = stack.pop()!;
      visit(node, read, set);
      for (const child of node.children) if (child) stack.push(child);
    }
    return { read: [...read].filter((name) => ENVIRONMENT_NAME.test(name) && !set.has(name) && !SHELL_SET.has(name)).sort(), set };
  } finally {
    // Trees live in WebAssembly memory: nothing frees them but this.
    tree.delete();
  }
}

function visit(node: Node, read: Set<string>, set: Set<string>): void {
  switch (node.type) {
    case 'simple_expansion': {
      const name = node.namedChild(0);
      if (name?.type === 'variable_name') read.add(name.text);
      break;
    }
    case 'expansion':
      expansion(node, read, set);
      break;
    case 'variable_assignment':
      set.add((node.childForFieldName('name')?.text ?? '').replace(/\[.*$/s, ''));
      break;
    case 'for_statement':
      set.add(node.childForFieldName('variable')?.text ?? '');
      break;
    case 'declaration_command':
      for (const child of node.namedChildren) if (child?.type === 'variable_name') set.add(child.text);
      break;
    case 'command':
      if (SETTERS.has(node.childForFieldName('name')?.text ?? '')) {
        for (const word of node.childrenForFieldName('argument')) if (word) set.add(word.text);
      }
      break;
  }
}

/** `${NAME}`, `${NAME%x}`, `${NAME:?}` read NAME; `${#NAME}`, `${!NAME}` and defaulted ones need nothing set. */
function expansion(node: Node, read: Set<string>, set: Set<string>): void {
  const children = node.children.filter((child): child is Node => child !== null);
  const at = children.findIndex((child) => child.type === 'variable_name');
  if (at === -1 || children[at - 1]?.type !== '${') return;
  const operator = children[at + 1]?.type ?? '';
  if (operator === '=' || operator === ':=') set.add(children[at].text);
  else if (!DEFAULTED.has(operator)) read.add(children[at].text);
}
