/**
 * The `cadre` command line, on top of the typed client in ./client: the program, its connection
 * flags and its exit codes here; each command group in ./commands, where a command parses its
 * arguments and prints (the worker, the AI SDK and servers load only in the commands that run them).
 */
import { Command, CommanderError } from 'commander';
import { PlanError } from '../plan-format/plan-error';
import { formatIssues } from '../plan-format/issues';
import { CadreError, UsageError } from '../errors/cadre-error';
import { errorChain } from './error-chain';
import { setConnectionFlags } from './connection-config';
import { packageVersion } from '../package-root';
import { registerAnswerCommands } from './commands/answers';
import { registerAskCommand } from './commands/ask';
import { registerAuditCommand, registerSessionCommands } from './commands/agents';
import { registerCompletionCommand } from './commands/completion';
import { registerDemoCommand, registerDevCommands } from './commands/dev';
import { registerModelsCommand } from './commands/models';
import { registerRolesCommand } from './commands/roles';
import { registerRunCommand } from './commands/run';
import { registerDiffCommand, registerForkCommand } from './commands/fork';
import { registerControlCommands, registerResultCommand, registerStatusCommands } from './commands/runs';
import { registerServeCommand } from './commands/serve';
import { registerTeamCommand } from './commands/team';
import { registerValidateCommand } from './commands/validate';
import { registerWorkerCommands } from './commands/worker';
import { registerWorktreesCommand } from './commands/worktrees';
import { registerStatsCommand } from './stats-command';

export function buildProgram(): Command {
  const program = new Command('cadre')
    .description('Durable plans and agents on Temporal')
    .version(packageVersion(), '-V, --version', 'print the version of cadre')
    .option('--address <host:port>', 'the Temporal server (default: TEMPORAL_ADDRESS, the profile, `cadre dev` here, 127.0.0.1:7233)')
    .option('--namespace <name>', 'the Temporal namespace (default: TEMPORAL_NAMESPACE, the profile, "default")')
    .option('--profile <name>', 'a profile of the Temporal config file, as the temporal CLI reads it (TLS, API key)')
    .showHelpAfterError()
    .exitOverride();
  // Every command connects through the same settings: flags over Temporal's variables and config file.
  program.hook('preAction', () => setConnectionFlags(program.opts<{ address?: string; namespace?: string; profile?: string }>()));

  // In the order `cadre --help` lists them.
  registerDevCommands(program); // dev, codec-server
  registerWorkerCommands(program); // worker, setup
  registerValidateCommand(program);
  registerRunCommand(program);
  registerForkCommand(program);
  registerDiffCommand(program);
  registerTeamCommand(program);
  registerStatusCommands(program); // status, list, watch
  registerAnswerCommands(program); // answer, approve, deny
  registerAuditCommand(program);
  registerAskCommand(program);
  registerSessionCommands(program); // send, chat
  registerServeCommand(program);
  registerControlCommands(program); // pause, resume, cancel
  registerWorktreesCommand(program);
  registerResultCommand(program);
  registerRolesCommand(program);
  registerModelsCommand(program);
  registerStatsCommand(program);
  registerCompletionCommand(program);
  registerDemoCommand(program);

  return program;
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    process.exitCode = reportError(err);
  }
}

/** One clear line (or one line per plan problem), no stack trace unless CADRE_DEBUG is set. */
function reportError(err: unknown): number {
  // Commander has printed its message. It would exit 1; cadre keeps 1 for failed runs and requests.
  if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
  if (process.env.CADRE_DEBUG) console.error(err);
  if (err instanceof PlanError) {
    process.stderr.write(`${err.message}\n${formatIssues(err.issues).replace(/^/gm, '  ')}\n`);
    return 2;
  }
  if (err instanceof CadreError) {
    process.stderr.write(`cadre: ${err.message}\n`);
    return err instanceof UsageError ? 2 : 1;
  }
  process.stderr.write(`cadre: ${errorChain(err).split('\n')[0]}\n`);
  return 1;
}
