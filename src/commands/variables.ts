/** Variables that decide what programs run (`PATH=`, `LD_PRELOAD=`, `PAGER=`): hazards, and the commands they hold judged. */
import type { Collector, Layer, ScriptText, Site, Word } from './segments';
import { judgeCommandValue } from './scripts';
import { isAssignment } from './wrapper-options';

/**
 * Variables that make some program run another, or change which program a name runs (HOME,
 * XDG_CONFIG_HOME and ZDOTDIR move the startup files and git config a program reads).
 */
export const HAZARDOUS_VARIABLES =
  /^(PATH|BASH_CMDS|BASH_ALIASES|BASH_LOADABLES_PATH|LD_[A-Z_]+|DYLD_[A-Z_]+|BASH_ENV|ENV|ZDOTDIR|HOME|XDG_CONFIG_HOME|PROMPT_COMMAND|PS4|SHELLOPTS|BASHOPTS|BASH_FUNC_.*|PAGER|MANPAGER|GIT_PAGER|EDITOR|VISUAL|GIT_EDITOR|GIT_SEQUENCE_EDITOR|GIT_SSH|GIT_SSH_COMMAND|GIT_EXTERNAL_DIFF|GIT_ASKPASS|SSH_ASKPASS|GIT_EXEC_PATH|GIT_PROXY_COMMAND|GIT_CONFIG.*|NODE_OPTIONS|PERL5OPT|PERL5LIB|PYTHONPATH|PYTHONSTARTUP|RUBYOPT|LESSOPEN|LESSCLOSE)$/;

export function flagAssignments(words: Word[], at: Layer, site: Site): void {
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
export function flagVariable(assigned: string, text: string, value: ScriptText, at: Layer, out: Collector): void {
  const name = assigned.replace(/\[.*$/s, ''); // BASH_CMDS[ls]=/bin/rm
  if (!HAZARDOUS_VARIABLES.test(name)) return;
  const runsValue = COMMAND_VARIABLES.test(name);
  if (!runsValue || !value.exact) out.hazard(text, `sets ${name}, which decides what programs run`, at);
  if (runsValue) judgeCommandValue(name, value, at, out);
  // env 'BASH_FUNC_ls%%=() { rm x; }' bash -c ls: a function bash imports; its body is judged.
  if (name.startsWith('BASH_FUNC_')) judgeCommandValue(name, { text: `f${value.text}`, exact: value.exact }, at, out);
}
