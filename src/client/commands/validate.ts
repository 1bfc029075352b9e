/** `cadre validate [--preflight]`: a plan file's problems, and with --preflight what it needs here and on the server. */
import { type Command, Option } from 'commander';
import { formatProblems } from '../../preflight/codes';
import { checkPlan, checkServer } from '../../preflight/preflight';
import { PlanError, loadPlanWithWarnings } from '../../spec/load';
import { formatIssues } from '../../spec/validate';
import { CadreError } from '../client';
import { taskQueue } from '../task-queue';
import { collectInput, info, out, withClient } from './shared';

export function registerValidateCommand(program: Command): void {
  program
    .command('validate <plan>')
    .description('check a plan file and report every problem with its path')
    .option('--preflight', 'also check what the plan needs here and on the server: commands, workspaces, hosts, variables, a worker (codes CADRE-E1xx/E2xx/E3xx)')
    .addOption(new Option('-i, --input <name=value>', 'a plan input, for --preflight (repeatable)').argParser(collectInput).default({}, 'none'))
    .option('--task-queue <queue>', 'the task queue whose workers --preflight looks for', taskQueue())
    .option('--json', 'print {ok, plan, steps, warnings} or {ok: false, issues} as JSON (with --preflight: {ok, problems})')
    .addHelpText('after', '\nExamples:\n  cadre validate plan.yaml\n  cadre validate plan.yaml --json | jq \'.issues[].path\'\n  cadre validate plan.yaml --preflight -i vip=me@example.com')
    .action(async (file: string, opts: { json?: boolean; preflight?: boolean; input: Record<string, string>; taskQueue: string }) => {
      if (opts.preflight) return preflightCommand(file, opts);
      if (opts.json) {
        try {
          const { plan, warnings } = await loadPlanWithWarnings(file, process.cwd());
          out(JSON.stringify({ ok: true, file, plan: plan.name, steps: plan.steps.length, warnings }, null, 2));
        } catch (err) {
          if (!(err instanceof PlanError)) throw err;
          out(JSON.stringify({ ok: false, file, issues: err.issues }, null, 2));
          process.exitCode = 2;
        }
        return;
      }
      const { plan, warnings } = await loadPlanWithWarnings(file, process.cwd());
      // Warnings (a run close to Temporal's limits) do not make the plan invalid: exit 0.
      if (warnings.length > 0) {
        info(`${file}: ${warnings.length} warning${warnings.length === 1 ? '' : 's'}\n${formatIssues(warnings).replace(/^/gm, '  ')}`);
      }
      out(`${file}: ok (plan "${plan.name}", ${plan.steps.length} steps)`);
    });
}

/** `cadre validate --preflight`: exit 0 when ready, 2 for problems of the plan or this machine, 1 for the server's. */
async function preflightCommand(file: string, opts: { json?: boolean; input: Record<string, string>; taskQueue: string }): Promise<void> {
  const { plan, problems } = await checkPlan(file, process.cwd(), opts.input);
  if (plan) {
    try {
      await withClient(async (client) => problems.push(...(await checkServer(client.connection, client.server.namespace, opts.taskQueue))));
    } catch (err) {
      if (!(err instanceof CadreError)) throw err;
      problems.push({ code: 'CADRE-E301', path: '', message: err.message });
    }
  }
  const local = problems.some((p) => p.code < 'CADRE-E3');
  process.exitCode = problems.length === 0 ? 0 : local ? 2 : 1;
  if (opts.json) out(JSON.stringify({ ok: problems.length === 0, file, ...(plan && { plan: plan.name }), problems }, null, 2));
  else if (problems.length === 0) out(`${file}: ready to run (plan "${plan?.name}", ${plan?.steps.length} steps; a worker polls "${opts.taskQueue}")`);
  else out(`${file}: ${problems.length} problem${problems.length === 1 ? '' : 's'}\n${formatProblems(problems).replace(/^/gm, '  ')}`);
}
