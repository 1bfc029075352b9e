/** `cadre run <plan>`: start a plan, checked here first; with --wait, follow it to its end. */
import { type Command, Option } from 'commander';
import { errorsOf, formatProblems, warningsOf } from '../../preflight/codes';
import type { CompiledPlan } from '../../plan-format/types';
import { formatIssues } from '../../plan-format/issues';
import { CadreError, UsageError } from '../../errors/cadre-error';
import { renderDiagnostics } from '../format';
import { taskQueue } from '../../protocol/task-queue';
import { checkWorkflowId } from '../workflow-ids';
import type { CadreClient } from '../client';
import { collectInput, exitCodeOf, follow, info, leaveRunOnCtrlC, out, withClient } from './shared';

export function registerRunCommand(program: Command): void {
  program
    .command('run <plan>')
    .description('start a plan')
    .addHelpText('after', '\nExamples:\n  cadre run plan.yaml -i vip=me@example.com\n  cadre run plan.yaml --wait\n  cadre run plan.yaml --id nightly-2026-11-23 --json')
    .addOption(new Option('-i, --input <name=value>', 'a plan input (repeatable)').argParser(collectInput).default({}, 'none'))
    .option('--id <id>', 'workflow id (default: derived from the plan and inputs)')
    .option('--task-queue <queue>', 'task queue of the workers', taskQueue())
    .option('-w, --wait', 'follow progress and exit 0 only when the plan completed')
    .option('--json', 'print JSON')
    .option('--no-preflight', 'start without checking commands, workspaces, hosts and variables here (workers on another machine)')
    .action(async (file: string, opts: { input: Record<string, string>; id?: string; taskQueue: string; wait?: boolean; json?: boolean; preflight: boolean }) => {
      if (opts.id !== undefined) checkWorkflowId(opts.id);
      // The plan format and the checks load only when a command runs: `cadre --version` starts fast.
      const [{ loadPlan }, { resolveInputs }, { environmentProblems }] = await Promise.all([import('../../plan-format/load'), import('../../plan-format/inputs'), import('../../preflight/environment')]);
      const plan = await loadPlan(file, process.cwd());
      if (plan.sandbox?.mode === 'none') info(`warning: ${file} says sandbox: none: its tools run unconfined, with the worker's permissions, files and network (docs/security.md)`);
      // Bad inputs are the user's to fix before any server is involved.
      const inputs = resolveInputs(plan, opts.input);
      if (!inputs.ok) throw new CadreError(`bad inputs:\n${formatIssues(inputs.issues)}`);
      if (opts.preflight) {
        const problems = await environmentProblems(plan);
        // Warnings: what a step before may create. Only errors keep the run from starting.
        for (const warning of warningsOf(problems)) info(formatProblems([warning]));
        const errors = errorsOf(problems);
        if (errors.length > 0) {
          throw new UsageError(`${file}: the plan would fail here (\`cadre run --no-preflight\` starts it anyway, for workers elsewhere):\n${formatProblems(errors).replace(/^/gm, '  ')}`);
        }
      }
      await startAndFollow(plan, inputs.values, { ...opts, warnWithoutWorker: opts.preflight });
    });
}

/** Starts a plan; with `wait`, follows it to the end and exits by how it ended. */
export async function startAndFollow(
  plan: CompiledPlan,
  inputs: Record<string, unknown>,
  opts: { id?: string; taskQueue: string; wait?: boolean; json?: boolean; warnWithoutWorker?: boolean },
): Promise<void> {
  await startedAndFollowed((client) => client.start(plan, inputs, { workflowId: opts.id, taskQueue: opts.taskQueue }), opts);
}

/** Starts a run (`start`), prints its id; with `wait`, follows it to the end and exits by how it ended. */
export async function startedAndFollowed(
  start: (client: CadreClient) => Promise<{ workflowId: string }>,
  opts: { taskQueue: string; wait?: boolean; json?: boolean; warnWithoutWorker?: boolean },
): Promise<void> {
  await withClient(async (client) => {
    if (opts.warnWithoutWorker) {
      // The run would wait for a worker: say so, and start it all the same.
      const { checkWorkers } = await import('../../preflight/preflight');
      const problems = await checkWorkers(client.connection, client.server.namespace, opts.taskQueue).catch(() => []);
      for (const p of problems) info(`warning: ${formatProblems([p])}`);
    }
    const started = await start(client);
    const link = client.uiLink(started.workflowId);
    if (!opts.wait) {
      if (opts.json) out(JSON.stringify({ ...started, ...(link && { ui: link }) }));
      else {
        out(started.workflowId);
        if (link) info(`Web UI: ${link}`);
        info(`follow it with: cadre watch ${started.workflowId}`);
      }
      return;
    }
    if (!opts.json) info(`started ${started.workflowId}${link ? `\nWeb UI: ${link}` : ''}`);
    leaveRunOnCtrlC(started.workflowId);
    const final = await follow(client, started.workflowId, info, opts.json ? () => undefined : undefined);
    out(opts.json ? JSON.stringify({ workflowId: started.workflowId, ...final }, null, 2) : renderDiagnostics(started.workflowId, final));
    process.exitCode = exitCodeOf(final.status);
  });
}
