/**
 * `cadre fork <run> --from <step>`: an ended run again from one step, every step that does not
 * depend on it restored; `cadre diff <a> <b>`: two runs step by step, only what differs.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { taskQueue } from '../../protocol/task-queue';
import { checkWorkflowId } from '../workflow-ids';
import { startedAndFollowed } from './run';
import { collectInput, out, withClient } from './shared';

export function registerForkCommand(program: Command): void {
  program
    .command('fork <run>')
    .description('run an ended run again from a step: the steps that do not depend on it are restored from its records, not run or paid again')
    .addHelpText(
      'after',
      '\nExamples:\n  cadre fork nightly-7 --from report\n  cadre fork nightly-7 --from decide --set draft=\'"a shorter draft"\' --wait\n  cadre fork nightly-7 --from fetch -i day=2026-11-28\n\nSee docs/forks.md.',
    )
    .requiredOption('--from <step>', 'the step to run again from: it, and every step that depends on it, run again')
    .addOption(new Option('--set <step=json>', "a restored step's output replaced (repeatable); the steps that read it run again").argParser(collectSet).default({}, 'none'))
    .addOption(new Option('-i, --input <name=value>', 'an input given anew (repeatable); the steps that read it run again').argParser(collectInput).default({}, 'none'))
    .option('--id <id>', 'workflow id of the fork (default: <run>-fork-<time>)')
    .option('--task-queue <queue>', 'task queue of the workers', taskQueue())
    .option('-w, --wait', 'follow progress and exit 0 only when the fork completed')
    .option('--json', 'print JSON')
    .action(async (run: string, opts: { from: string; set: Record<string, unknown>; input: Record<string, string>; id?: string; taskQueue: string; wait?: boolean; json?: boolean }) => {
      checkWorkflowId(run);
      if (opts.id !== undefined) checkWorkflowId(opts.id);
      const given = (values: Record<string, unknown>) => (Object.keys(values).length > 0 ? values : undefined);
      await startedAndFollowed(
        (client) => client.fork(run, { step: opts.from, set: given(opts.set), inputs: given(opts.input), workflowId: opts.id, taskQueue: opts.taskQueue }),
        opts,
      );
    });
}

export function registerDiffCommand(program: Command): void {
  program
    .command('diff <a> <b>')
    .description('two runs of a plan (a run and its fork) step by step: only what differs (status, output, attempts, tokens, time)')
    .addHelpText('after', '\nExamples:\n  cadre diff nightly-7 nightly-7-fork-mx2a1k\n  cadre diff nightly-7 nightly-8 --json')
    .option('--json', 'print JSON')
    .action(async (a: string, b: string, opts: { json?: boolean }) => {
      const { renderDiff } = await import('../diff');
      await withClient(async (client) => {
        const diff = await client.diff(a, b);
        out(opts.json ? JSON.stringify(diff, null, 2) : renderDiff(diff));
      });
    });
}

/** `--set step=<json>`, repeatable: the value is JSON (a string is quoted: `--set s='"text"'`). */
function collectSet(value: string, previous: Record<string, unknown>): Record<string, unknown> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`expected step=<json>, got "${value}"`);
  const step = value.slice(0, eq);
  try {
    return { ...previous, [step]: JSON.parse(value.slice(eq + 1)) as unknown };
  } catch (err) {
    throw new InvalidArgumentError(`--set ${step}: the output is not JSON (${(err as Error).message}); quote a string: --set ${step}='"text"'`);
  }
}
