/**
 * `cadre completion bash|zsh`: a completion script made from the command tree itself, so it
 * never falls behind the commands: command names, each command's options, the choices of options
 * that have them (`--status`), and file names for arguments. zsh loads the bash one through
 * bashcompinit.
 */
import type { Command, Option } from 'commander';

const word = (text: string) => text.replace(/[^A-Za-z0-9_.:/=-]/g, '');

function optionWords(options: readonly Option[]): string[] {
  return options.flatMap((o) => [o.long, o.short].filter((f): f is string => Boolean(f)));
}

function bashScript(program: Command): string {
  const commands = program.commands.map((c) => c.name());
  const global = optionWords(program.options);
  // Options whose next word is their value, so it is not taken for the command.
  const valued = program.options.filter((o) => o.required || o.optional).map((o) => o.long).filter(Boolean);
  const choices = [...program.options, ...program.commands.flatMap((c) => c.options)].filter((o) => o.argChoices && o.long);
  // A command group (`models`) completes its commands' names too.
  const cases = program.commands.map((c) => `    ${word(c.name())}) words="${[...c.commands.map((sub) => sub.name()), ...optionWords(c.options), '--help'].map(word).join(' ')}" ;;`);
  return `# cadre completion for bash: add \`source <(cadre completion bash)\` to ~/.bashrc
_cadre() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}" cmd="" words="" i
  case "$prev" in
${[...new Map(choices.map((o) => [o.long, o])).values()].map((o) => `    ${word(o.long as string)}) COMPREPLY=($(compgen -W "${(o.argChoices ?? []).map(word).join(' ')}" -- "$cur")); return ;;`).join('\n')}
  esac
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in
      ${valued.map((v) => word(v as string)).join('|') || '--'}) ((i++)) ;;
      -*) ;;
      *) cmd="\${COMP_WORDS[i]}"; break ;;
    esac
  done
  case "$cmd" in
    "") words="${[...commands, ...global].map(word).join(' ')}" ;;
${cases.join('\n')}
  esac
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
  if [[ -n "$cmd" && "$cur" != -* ]]; then COMPREPLY+=($(compgen -f -- "$cur")); fi
}
complete -o filenames -F _cadre cadre
`;
}

export function completionScript(program: Command, shell: string): string {
  if (shell === 'bash') return bashScript(program);
  if (shell === 'zsh') return `#compdef cadre\n# cadre completion for zsh: add \`source <(cadre completion zsh)\` to ~/.zshrc\nautoload -U +X bashcompinit && bashcompinit\n${bashScript(program)}`;
  throw new Error(`unknown shell "${shell}"`);
}
