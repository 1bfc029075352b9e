/** `cadre worktrees [prune]`: the git worktrees cadre made for runs' tasks. */
import type { Command } from 'commander';
import { UsageError } from '../../errors/cadre-error';
import { out, withClient } from './shared';

export function registerWorktreesCommand(program: Command): void {
  program
    .command('worktrees [action]')
    .description("the git worktrees cadre made for runs' tasks; `prune` removes those of closed runs that hold nothing unsaved")
    .option('--repo <dir>', 'the repository', '.')
    .option('--json', 'print JSON')
    .action(async (action: string | undefined, opts: { repo: string; json?: boolean }) => {
      if (action !== undefined && action !== 'prune') throw new UsageError(`unknown action "${action}": the only one is prune`);
      const { pruneWorktrees, runWorktrees } = await import('../worktrees');
      await withClient(async (client) => {
        if (action === 'prune') {
          const outcomes = await pruneWorktrees(client, opts.repo);
          if (opts.json) return out(JSON.stringify(outcomes, null, 2));
          if (outcomes.length === 0) return out('no worktrees made by cadre');
          for (const o of outcomes) out(`${o.removed ? 'removed' : 'kept'} ${o.path} (${o.branch}): ${o.reason}`);
          return;
        }
        const worktrees = await runWorktrees(client, opts.repo);
        if (opts.json) return out(JSON.stringify(worktrees, null, 2));
        if (worktrees.length === 0) return out('no worktrees made by cadre');
        out(`${'PATH'.padEnd(50)} ${'BRANCH'.padEnd(30)} ${'STATE'.padEnd(8)} ${'RUN'.padEnd(40)} STEP`);
        for (const w of worktrees) {
          const run = w.run ? `${w.run} (${w.runOpen ? 'open' : 'closed'})` : '-';
          out(`${w.path.padEnd(50)} ${w.branch.padEnd(30)} ${w.state.padEnd(8)} ${run.padEnd(40)} ${w.step ?? '-'}`);
        }
      });
    });
}
