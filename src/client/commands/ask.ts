/** `cadre ask <request>`: a request in words, routed to a plan that answers it. */
import type { Command } from 'commander';
import { ProgressPrinter, renderDiagnostics } from '../format';
import { exitCodeOf, info, leaveRunOnCtrlC, out, withClient } from './shared';

export function registerAskCommand(program: Command): void {
  program
    .command('ask <request>')
    .description('a request in words, routed by the ask section of cadre.config.yaml to a plan that answers it; prints the answer')
    .option('--model <provider:model>', 'route with this model instead of the rules')
    .option('--config <file>', 'the config file with the ask section (default: CADRE_CONFIG or ./cadre.config.yaml)')
    .option('--json', 'print the route, the run id and the answer as JSON')
    .action(async (request: string, opts: { model?: string; config?: string; json?: boolean }) => {
      const { ask } = await import('../../ask/ask');
      await withClient(async (client) => {
        const started = await ask(client, request, { ...(opts.model && { model: opts.model }), ...(opts.config && { configPath: opts.config }) });
        const how = 'rules' in started.by ? `rule "${started.by.rules.pattern}"` : `model ${started.by.model}`;
        const slots = Object.entries(started.slots).map(([k, v]) => `${k}=${v}`).join(', ');
        info(`intent ${started.intent} (by ${how}${slots ? `; ${slots}` : ''}); run ${started.workflowId}`);
        for (const a of started.asking) info(`  it will ask for ${a.slot}: ${a.why}`);
        leaveRunOnCtrlC(started.workflowId);
        const printer = new ProgressPrinter(started.workflowId, info);
        const final = await client.watch(started.workflowId, (d) => {
          // Only what waits for the person asking: a question to answer.
          if (d.waiting.length > 0) printer.update(d);
        });
        const result = final.status === 'completed' ? await client.result(started.workflowId) : final;
        if (opts.json) out(JSON.stringify({ intent: started.intent, by: started.by, slots: started.slots, workflowId: started.workflowId, status: result.status, output: result.output }, null, 2));
        else if (result.status === 'completed') out(JSON.stringify(result.output, null, 2));
        else out(renderDiagnostics(started.workflowId, result));
        process.exitCode = exitCodeOf(result.status);
      });
    });
}
