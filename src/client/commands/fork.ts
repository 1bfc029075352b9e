/**
 * `cadre fork <run> --from <step>`: an ended run again from one step, every step that does not
 * depend on it restored; `cadre diff <a> <b>`: two runs step by step, only what differs.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import { taskQueue } from '../../protocol/task-queue';
import { checkWorkflowId } from '../workflow-ids';
import { startedAndFollowed } from './run';
import { collectInput, info, out, withClient } from './shared';
import { UsageError } from '../../errors/cadre-error';
import { sinceOption } from '../stats-command';
import type { BulkForkOptions } from '../bulk-fork';

export function registerForkCommand(program: Command): void {
  program
    .command('fork [run]')
    .description('run an ended run again from a step: the steps that do not depend on it are restored from its records, not run or paid again')
    .addHelpText(
      'after',
      '\nExamples:\n  cadre fork nightly-7 --from report\n  cadre fork nightly-7 --from draft --turn 2\n  cadre fork chat-20261129 --at 5\n  cadre fork nightly-7 --from decide --set draft=\'"a shorter draft"\' --wait\n  cadre fork nightly-7 --from fetch -i day=2026-11-28\n  cadre fork nightly-7 --from report --plan nightly-fixed.yaml\n  cadre fork --failed --from-failure --since 1d --plan-name nightly --wait\n\nSee docs/forks.md.',
    )
    .option('--from <step>', 'the step to run again from: it, and every step that depends on it, run again; `enrich[3]`: one item of a forEach')
    .option('--turn <n>', "with --from an agent step: keep its first n turns (from the old run's history), the model going on from turn n+1", positiveInt)
    .option('--at <n>', 'a session (cadre chat, send): a new session holding its first n messages and their replies', positiveInt)
    .addOption(new Option('--set <step=json>', "a restored step's output replaced (repeatable); the steps that read it run again").argParser(collectSet).default({}, 'none'))
    .addOption(new Option('-i, --input <name=value>', 'an input given anew (repeatable); the steps that read it run again').argParser(collectInput).default({}, 'none'))
    .option('--plan <file>', 'fork onto an edited plan: its steps whose action changed (or that are new) run again, saying why')
    .option('--failed', 'fork every plan run that failed (after a fix), each from --from or, with --from-failure, from its failed step')
    .option('--from-failure', 'with --failed: each run from the step that failed')
    .option('--since <duration>', 'with --failed: runs started in this past time, e.g. 1d or 12h', sinceOption, undefined)
    .option('--plan-name <name>', "with --failed: only runs of this plan (default: --plan's name, else any)")
    .option('--id <id>', 'workflow id of the fork (default: <run>-fork-<time>)')
    .option('--task-queue <queue>', 'task queue of the workers', taskQueue())
    .option('-w, --wait', 'follow progress and exit 0 only when the fork (every fork) completed')
    .option('--json', 'print JSON')
    .action(async (run: string | undefined, opts: ForkCommandOptions) => {
      const given = (values: Record<string, unknown>) => (Object.keys(values).length > 0 ? values : undefined);
      // An edited plan is checked here, as `cadre run` checks one, before any server is involved.
      const plan = opts.plan === undefined ? undefined : await (await import('../../plan-format/load')).loadPlan(opts.plan, process.cwd());
      const fork = { set: given(opts.set), inputs: given(opts.input), plan, taskQueue: opts.taskQueue };
      if (opts.failed) return forkFailedRuns(run, opts, fork);
      if (opts.at !== undefined) return forkASession(run, opts);
      if (run === undefined || opts.from === undefined) throw new UsageError('cadre fork <run> --from <step> (or --failed --from-failure)');
      if (opts.fromFailure || opts.since || opts.planName) throw new UsageError('--from-failure, --since and --plan-name go with --failed');
      checkWorkflowId(run);
      if (opts.id !== undefined) checkWorkflowId(opts.id);
      const step = opts.from;
      await startedAndFollowed((client) => client.fork(run, { ...fork, step, ...(opts.turn !== undefined && { turn: opts.turn }), workflowId: opts.id }), opts);
    });
}

interface ForkCommandOptions {
  from?: string;
  turn?: number;
  at?: number;
  set: Record<string, unknown>;
  input: Record<string, string>;
  plan?: string;
  failed?: boolean;
  fromFailure?: boolean;
  since?: Date;
  planName?: string;
  id?: string;
  taskQueue: string;
  wait?: boolean;
  json?: boolean;
}

/** `cadre fork --failed`: every failed run of the window forked; with --wait, a table of how each fork ended. */
async function forkFailedRuns(run: string | undefined, opts: ForkCommandOptions, fork: Omit<BulkForkOptions, 'since'>): Promise<void> {
  if (run !== undefined || opts.id !== undefined || opts.turn !== undefined) throw new UsageError('--failed forks every failed run: give no run, no --id and no --turn');
  if (opts.fromFailure === (opts.from !== undefined)) throw new UsageError('--failed takes --from-failure (each run from its failed step) or --from <step> (the same step for all)');
  const { forkFailed } = await import('../bulk-fork');
  await withClient(async (client) => {
    const since = opts.since ?? new Date(Date.now() - DAY_MS);
    const report = await forkFailed(client, { ...fork, since, ...(opts.planName && { planName: opts.planName }), ...(opts.from && { step: opts.from }) });
    for (const skipped of report.skipped) info(`skipped ${skipped.run}: ${skipped.why}`);
    if (report.more) info(`more failed runs match than one bulk fork takes: narrow --since or --plan-name and fork again`);
    const ended = opts.wait ? await Promise.all(report.forked.map(async (f) => ({ ...f, status: (await client.result(f.fork, { readStored: false })).status }))) : report.forked;
    if (opts.json) out(JSON.stringify({ ...report, forked: ended }, null, 2));
    else if (ended.length === 0) out(`no failed run${opts.planName ? ` of ${opts.planName}` : ''} since ${since.toISOString()} to fork`);
    else for (const f of ended) out(`${f.run.padEnd(40)} ${f.step.padEnd(16)} ${f.fork}${'status' in f ? `  ${String(f.status)}` : ''}`);
    if (opts.wait && ended.some((f) => 'status' in f && f.status !== 'completed')) process.exitCode = 1;
  });
}

const DAY_MS = 24 * 3_600_000;

/** `cadre fork <session> --at <n>`: prints the new session's id (talk to it with `cadre chat` or `cadre send`). */
async function forkASession(session: string | undefined, opts: ForkCommandOptions): Promise<void> {
  if (session === undefined) throw new UsageError('cadre fork <session> --at <n>');
  if (opts.from !== undefined || Object.keys(opts.set).length > 0 || opts.plan !== undefined || opts.turn !== undefined) throw new UsageError('--at forks a session: --from, --set, --plan and --turn are for plan runs');
  const { forkSession } = await import('../session-fork');
  await withClient(async (client) => {
    const { workflowId } = await forkSession(client, session, { at: opts.at as number, ...(opts.id && { workflowId: opts.id }), taskQueue: opts.taskQueue });
    if (opts.json) out(JSON.stringify({ workflowId, forkedFrom: { run: session, message: opts.at } }));
    else {
      out(workflowId);
      info(`talk to it with: cadre send ${workflowId} "..."  (or cadre chat ${workflowId})`);
    }
  });
}

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError(`expected a message number from 1, got "${value}"`);
  return n;
}

export function registerDiffCommand(program: Command): void {
  program
    .command('diff <a> <b>')
    .description('two runs of a plan (a run and its fork) step by step: only what differs (status, output, attempts, tokens, cost, time), and what each spent')
    .addHelpText('after', '\nExamples:\n  cadre diff nightly-7 nightly-7-fork-mx2a1k\n  cadre diff nightly-7 nightly-8 --json')
    .option('--json', 'print JSON')
    .action(async (a: string, b: string, opts: { json?: boolean }) => {
      const { renderDiff } = await import('../diff');
      // Costs from the price table of the config file the worker would read here (CADRE_CONFIG, or ./cadre.config.yaml).
      const { loadPricing } = await import('../../providers/config');
      const pricing = loadPricing(process.env.CADRE_CONFIG ?? 'cadre.config.yaml');
      await withClient(async (client) => {
        const diff = await client.diff(a, b, pricing);
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
