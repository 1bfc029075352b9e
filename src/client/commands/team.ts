/** `cadre team <goal-or-plan>`: a goal or a plan file handed to a team of agents. */
import type { Command } from 'commander';
import { taskQueue } from '../../protocol/task-queue';
import { checkWorkflowId } from '../workflow-ids';
import { startAndFollow } from './run';
import { info } from './shared';

export function registerTeamCommand(program: Command): void {
  program
    .command('team <goal-or-plan>')
    .description('hand a goal (its lead takes the role that fits) or a plan file to a team of agents')
    .option('--id <id>', 'workflow id (default: derived from the plan and goal)')
    .option('--task-queue <queue>', 'task queue of the workers', taskQueue())
    .option('-w, --wait', 'follow progress and exit 0 only when the team completed')
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExamples:\n  cadre team "Write unit tests for the parser" --wait\n  cadre team examples/feature-team/plan.yaml --wait')
    .action(async (goalOrPlan: string, opts: { id?: string; taskQueue: string; wait?: boolean; json?: boolean }) => {
      if (opts.id !== undefined) checkWorkflowId(opts.id);
      const { teamStart } = await import('../team');
      const { plan, inputs, lead } = await teamStart(goalOrPlan, process.cwd());
      if (lead && !opts.json) info(`lead: ${lead.role}${lead.matched.length ? ` (matched: ${lead.matched.join(', ')})` : ' (no role matched the goal: the default)'}`);
      await startAndFollow(plan, inputs, opts);
    });
}
