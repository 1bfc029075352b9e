/** `cadre completion bash|zsh`: a shell completion script made from the command tree. */
import type { Command } from 'commander';
import { UsageError } from '../../errors/cadre-error';
import { completionScript } from '../completion';
import { out } from './shared';

export function registerCompletionCommand(program: Command): void {
  program
    .command('completion <shell>')
    .description('print a shell completion script (bash or zsh)')
    .addHelpText('after', '\nExamples:\n  source <(cadre completion bash)     # in ~/.bashrc\n  source <(cadre completion zsh)      # in ~/.zshrc')
    .action((shell: string) => {
      if (shell !== 'bash' && shell !== 'zsh') throw new UsageError(`unknown shell "${shell}": bash or zsh`);
      out(completionScript(program, shell).trimEnd());
    });
}
