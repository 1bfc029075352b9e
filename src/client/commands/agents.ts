/** An agent's audit log (`cadre audit`) and sessions with one (`cadre send`, `cadre chat`). */
import type { Command } from 'commander';
import { commaList, info, out, withRun } from './shared';
import { parseBudgetOption } from '../budget-option';
import type { Budget } from '../../protocol/budget';

export type SessionCliOptions = { model?: string; system?: string; tools?: string[]; ask?: string[]; workspace: string; budget?: Budget };

/** The options that start a session (send, chat, serve). */
export function sessionOptions(command: Command, askHelp = 'tools whose calls wait for your approval, comma-separated'): Command {
  return command
    .option('--model <provider:model>', 'the model (default: CADRE_MODEL or the worker\'s models.default)')
    .option('--system <text>', 'system prompt')
    .option('--tools <names>', 'tools the agent may call, comma-separated (fs.read,shell,ts:name,mcp:server/*)', commaList)
    .option('--ask <names>', askHelp, commaList)
    .option('--workspace <dir>', 'where its tools run', '.')
    .option('--budget <caps>', 'caps on what the session spends over all replies: tokens=N,toolCalls=N,cost=USD[,warnAt=0.8][,onBudget=ask|stop] (docs/budgets.md)', parseBudgetOption);
}

export function registerAuditCommand(program: Command): void {
  program
    .command('audit <id>')
    .description("a run's audit log: its agents' messages, model turns, tool calls and approvals, as JSON lines without content")
    .option('--dir <path>', 'where the worker writes audit logs (default: CADRE_AUDIT_DIR or ~/.cadre/audit)')
    .action(async (id: string, opts: { dir?: string }) => {
      const { CadreClient } = await import('../client');
      const lines = CadreClient.readAuditLog(id, opts.dir);
      for (const line of lines) out(line);
    });
}

export function registerSessionCommands(program: Command): void {
  sessionOptions(
    program
      .command('send <session> <message>')
      .description('send a message to a session, starting it if it is not running, and print the reply as it is written')
      .option('--json', 'print the reply and counts as JSON, once the reply is whole'),
  ).action(async (id: string, message: string, opts: SessionCliOptions & { json?: boolean }) => {
    const { printReply, sendMessage, sessionInput } = await import('../sessions');
    await withRun(id, async (client) => {
      if (opts.json) return out(JSON.stringify(await sendMessage(client, id, message, sessionInput(opts))));
      await printReply(client, id, message, sessionInput(opts));
    });
  });

  sessionOptions(program.command('chat [session]').description('talk with an agent in a session that survives restarts; /end ends it, Ctrl-D leaves it')).action(
    async (id: string | undefined, opts: SessionCliOptions) => {
      const [{ chat }, { chatSessionId, sessionInput }] = await Promise.all([import('../chat'), import('../sessions')]);
      const sessionId = id ?? chatSessionId();
      await withRun(sessionId, (client) => chat(client, sessionId, sessionInput(opts), { input: process.stdin, out, info, write: (text) => void process.stdout.write(text) }));
    },
  );
}
