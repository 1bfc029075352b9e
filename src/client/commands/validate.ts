/** `cadre validate [--preflight]`: a plan file's problems, and with --preflight what it needs here and on the server. */
import { type Command, Option } from 'commander';
import { errorsOf, formatProblems, problem, warningsOf } from '../../preflight/codes';
import { PlanError } from '../../plan-format/plan-error';
import type { CompiledPlan } from '../../plan-format/types';
import { formatIssues } from '../../plan-format/issues';
import { CadreError } from '../../errors/cadre-error';
import { taskQueue } from '../../protocol/task-queue';
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
      const { loadPlanWithWarnings } = await import('../../plan-format/load');
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

/** `cadre validate --preflight`: exit 0 when ready (warnings or not), 2 for problems of the plan or this machine, 1 for the server's. */
async function preflightCommand(file: string, opts: { json?: boolean; input: Record<string, string>; taskQueue: string }): Promise<void> {
  const { checkPlan, checkServer } = await import('../../preflight/preflight');
  const { plan, problems } = await checkPlan(file, process.cwd(), opts.input);
  if (plan) {
    try {
      await withClient(async (client) => problems.push(...(await checkServer(client.connection, client.server.namespace, opts.taskQueue))));
    } catch (err) {
      if (!(err instanceof CadreError)) throw err;
      problems.push(problem('CADRE-E301', '', err.message));
    }
  }
  // Warnings (what a step before may create) are shown, and do not keep the plan from running.
  const errors = errorsOf(problems);
  const warnings = warningsOf(problems);
  const local = errors.some((p) => p.code < 'CADRE-E3');
  process.exitCode = errors.length === 0 ? 0 : local ? 2 : 1;
  const listed = formatProblems([...errors, ...warnings]).replace(/^/gm, '  ');
  // What the models the plan calls cost, as the config file here prices them.
  const prices = plan ? await planPrices(plan) : {};
  const priced = Object.keys(prices).length > 0 ? `\n  prices: ${(await import('../../preflight/prices')).describePrices(prices)}` : '';
  if (opts.json) out(JSON.stringify({ ok: errors.length === 0, file, ...(plan && { plan: plan.name }), problems, prices }, null, 2));
  else if (errors.length === 0) out(`${file}: ready to run (plan "${plan?.name}", ${plan?.steps.length} steps; a worker polls "${opts.taskQueue}")${priced}${warnings.length > 0 ? `\n${listed}` : ''}`);
  else out(`${file}: ${counted(errors.length, 'problem')}${warnings.length > 0 ? `, ${counted(warnings.length, 'warning')}` : ''}${priced}\n${listed}`);
}

async function planPrices(plan: CompiledPlan) {
  const [{ knownPrices }, { loadPricing }] = await Promise.all([import('../../preflight/prices'), import('../../providers/config')]);
  return knownPrices(plan, loadPricing(process.env.CADRE_CONFIG ?? 'cadre.config.yaml'));
}

function counted(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}
