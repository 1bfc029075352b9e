/** `cadre answer`, `approve` and `deny`: what a run waits for, given. */
import type { Command } from 'commander';
import { out, withRun } from './shared';

export function registerAnswerCommands(program: Command): void {
  program
    .command('answer <id> <waitId> <value>')
    .description('answer a question or decide about a failed step (retry | skip | abort | extend[:10m]), or a spent budget (extend=<more> | stop)')
    .option('--json', 'print {workflowId, waitId, value, accepted} as JSON')
    .addHelpText('after', '\nExamples:\n  cadre answer plan-triage-1a2b3c confirm yes\n  cadre answer plan-triage-1a2b3c archive extend:10m\n  cadre answer plan-triage-1a2b3c fix/budget-1 extend=20000')
    .action(async (id: string, waitId: string, value: string, opts: { json?: boolean }) => {
      await withRun(id, async (client) => {
        await client.answer(id, waitId, value);
        out(opts.json ? JSON.stringify({ workflowId: id, waitId, value, accepted: true }) : `answered ${waitId}: ${value}`);
      });
    });

  program
    .command('approve <id> <waitId>')
    .description("let an agent's tool call that waits for approval run (`cadre status <id>` shows it whole)")
    .option('--always', 'and let this agent run exactly the same call (tool and arguments) again without asking')
    .option('--json', 'print {workflowId, waitId, value, accepted} as JSON')
    .action(async (id: string, waitId: string, opts: { json?: boolean; always?: boolean }) => {
      await withRun(id, async (client) => {
        const value = await client.approve(id, waitId, { always: opts.always });
        out(opts.json ? JSON.stringify({ workflowId: id, waitId, value, accepted: true }) : `approved ${waitId}${opts.always ? ' (and the same call from now on)' : ''}`);
      });
    });

  program
    .command('deny <id> <waitId>')
    .description("refuse an agent's tool call; the agent reads the denial (and the reason) as the call's result")
    .option('--reason <text>', 'why, for the agent to read')
    .option('--json', 'print {workflowId, waitId, value, accepted} as JSON')
    .action(async (id: string, waitId: string, opts: { reason?: string; json?: boolean }) => {
      await withRun(id, async (client) => {
        const value = await client.deny(id, waitId, opts.reason);
        out(opts.json ? JSON.stringify({ workflowId: id, waitId, value, accepted: true }) : `denied ${waitId}`);
      });
    });
}
