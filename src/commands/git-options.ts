/** git's global options (`git -C dir -c k=v push` is `git push`) and the config that makes git run commands. */
import { emit, type Layer, type Site, type Word } from './segments';
import { judgeCommandValue } from './scripts';

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
export function judgeGit(words: Word[], at: Layer, site: Site): void {
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
