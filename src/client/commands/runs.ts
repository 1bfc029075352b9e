/** The commands about runs once started: `status`, `list`, `watch`; `pause`, `resume`, `cancel`; `result`. */
import { type Command, Option } from 'commander';
import { renderDiagnostics } from '../format';
import { printPaged } from '../pager';
import { RUN_STATUSES } from '../run-status';
import { colourOn, paintStatus } from '../style';
import { exitCodeOf, follow, info, leaveRunOnCtrlC, out, positive, withClient, withRun } from './shared';
import { EventPrinter } from '../event-printer';
import type { CadreClient } from '../client';
import { CadreError, UsageError } from '../../errors/cadre-error';
import type { StreamCursor } from '../../streaming/reader';

export function registerStatusCommands(program: Command): void {
  program
    .command('status <id>')
    .description("a run's steps, what it waits for, its errors; exits 1 when it ended without completing")
    .addHelpText('after', '\nExamples:\n  cadre status plan-triage-1a2b3c\n  cadre status plan-triage-1a2b3c --json | jq \'.steps[] | select(.status == "failed")\'')
    .option('--json', 'print the diagnostics as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      await withRun(id, async (client) => {
        const d = await client.diagnostics(id);
        if (opts.json) out(JSON.stringify(d, null, 2));
        else await printPaged(renderDiagnostics(id, d), out);
        process.exitCode = exitCodeOf(d.status);
      });
    });

  program
    .command('list')
    .description('recent runs')
    .addHelpText('after', '\nExamples:\n  cadre list\n  cadre list --status waiting\n  cadre list --plan email-triage --limit 5 --json\n  cadre list --forks-of nightly-2026-11-23')
    .addOption(new Option('--status <status>', 'only runs in this state').choices(RUN_STATUSES))
    .option('--plan <name>', 'only runs of this plan')
    .option('--forks-of <run>', 'only forks of this run (cadre fork)')
    .option('--limit <n>', 'how many', positive, 20)
    .option('--json', 'print JSON')
    .action(async (opts: { status?: string; plan?: string; forksOf?: string; limit: number; json?: boolean }) => {
      await withClient(async (client) => {
        const runs = await client.list(opts);
        if (opts.json) return out(JSON.stringify(runs, null, 2));
        if (runs.length === 0) return out('no runs');
        const colour = colourOn();
        out(`${'WORKFLOW ID'.padEnd(40)} ${'PLAN'.padEnd(20)} ${'STATUS'.padEnd(10)} STARTED`);
        for (const run of runs) out(`${run.workflowId.padEnd(40)} ${String(run.plan ?? '').padEnd(20)} ${paintStatus(run.status, colour)}${' '.repeat(Math.max(1, 11 - run.status.length))}${run.startTime.toISOString()}`);
      });
    });

  program
    .command('watch <id>')
    .description("follow a run live until it ends: its steps, and its agents' text as they write it")
    .option('--json', 'print its events (docs/streaming.md) as JSON lines as they come')
    .option(
      '--from <position>',
      "with --json: resume where a reader left off: the run's offset, and <agent id>=<offset> for each agent's stream still open (repeat --from); Ctrl-C prints them",
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .addHelpText(
      'after',
      '\nExamples:\n  cadre watch plan-triage-1a2b3c\n  cadre watch plan-triage-1a2b3c --json | jq -c \'select(.type == "tool_call")\'\n  cadre watch plan-triage-1a2b3c --json --from 120 --from plan-triage-1a2b3c/review=45',
    )
    .action(async (id: string, opts: { json?: boolean; from?: string[] }) => {
      await withRun(id, async (client) => {
        if (opts.from !== undefined && !opts.json) throw new UsageError('--from needs --json (the human view follows the run from its start)');
        const { parseCursor } = await import('../../streaming/reader');
        const from = parseCursor(opts.from ?? []);
        if (!from) throw new UsageError(`--from takes the run's offset (a whole number, 0 or more) and <agent id>=<offset>: ${opts.from?.join(' ')}`);
        if (opts.json) {
          const final = await printEvents(client, id, from);
          process.exitCode = exitCodeOf(final);
          return;
        }
        leaveRunOnCtrlC(id);
        process.exitCode = exitCodeOf(await followWithText(client, id));
      });
    });
}

/** --json: every event as a line as it comes; the run's status once it ended. Ctrl-C says where to resume. */
async function printEvents(client: CadreClient, id: string, from: StreamCursor): Promise<string> {
  const { advance, formatCursor, startCursor } = await import('../../streaming/reader');
  let status: string | undefined;
  const cursor = startCursor(from);
  process.once('SIGINT', () => {
    info(`\nstopped following; resume with: cadre watch ${id} --json ${formatCursor(cursor).map((c) => `--from ${c}`).join(' ')}`);
    process.exit(130);
  });
  try {
    for await (const event of client.events(id, { from })) {
      out(JSON.stringify(event));
      advance(cursor, event);
      if (event.type === 'run_completed') status = event.status;
    }
  } catch (err) {
    if ((err as Error).message.includes('stream')) throw new CadreError(`${id} has no event stream (it started on a cadre from before streams): follow it with \`cadre watch ${id}\` without --json`);
    throw err;
  }
  return status ?? (await client.diagnostics(id)).status;
}

/** The human view: steps, waits and the ETA as before, with the agents' text and tool calls as they come. */
async function followWithText(client: CadreClient, id: string): Promise<string> {
  const printer = new EventPrinter({ write: (text) => void process.stdout.write(text), labelSteps: true });
  const stop = new AbortController();
  let seen = 0;
  // A run from before streams shows its steps only.
  const text = (async () => {
    for await (const event of client.events(id, { signal: stop.signal })) {
      // Agents' events have offsets of their own streams: only the run's count towards its end.
      if (event.stream === undefined) seen = event.offset + 1;
      printer.print(event);
    }
  })().catch(() => undefined);
  const final = await follow(client, id, (line) => {
    printer.endLine();
    out(line);
  });
  // The run has ended: the reader catches up with the stream's last event (a final answer), for a moment at most.
  const deadline = Date.now() + 2000;
  const { streamOffsetQuery } = await import('../../protocol/stream');
  const offset = client.client.workflow.getHandle(id).query(streamOffsetQuery);
  // An ended run's query needs a worker to replay it: when none answers soon, do without.
  const end = await Promise.race([offset.catch(() => 0), new Promise<number>((resolve) => setTimeout(() => resolve(0), 1000))]);
  while (seen < end && Date.now() < deadline) await Promise.race([text, new Promise((resolve) => setTimeout(resolve, 25))]);
  stop.abort();
  printer.endLine();
  return final.status;
}

export function registerControlCommands(program: Command): void {
  program
    .command('pause <id>')
    .description('let running steps finish and start no new ones')
    .addHelpText('after', '\nExamples:\n  cadre pause plan-triage-1a2b3c')
    .option('--json', 'print {workflowId, paused} as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      await withRun(id, async (client) => {
        await client.pause(id);
        out(opts.json ? JSON.stringify({ workflowId: id, paused: true }) : `paused ${id}`);
      });
    });

  program
    .command('resume <id>')
    .description('start steps again after a pause')
    .addHelpText('after', '\nExamples:\n  cadre resume plan-triage-1a2b3c')
    .option('--json', 'print {workflowId, paused} as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      await withRun(id, async (client) => {
        await client.resume(id);
        out(opts.json ? JSON.stringify({ workflowId: id, paused: false }) : `resumed ${id}`);
      });
    });

  program
    .command('cancel <id>')
    .description('cancel a run (compensations run); the same as `temporal workflow cancel`')
    .addHelpText('after', '\nExamples:\n  cadre cancel plan-triage-1a2b3c --reason \'wrong inbox\'')
    .option('--reason <text>', 'why')
    .option('--json', 'print {workflowId, cancelRequested} as JSON')
    .action(async (id: string, opts: { reason?: string; json?: boolean }) => {
      await withRun(id, async (client) => {
        await client.cancel(id, opts.reason);
        out(opts.json ? JSON.stringify({ workflowId: id, cancelRequested: true, ...(opts.reason && { reason: opts.reason }) }) : `cancellation requested for ${id}`);
      });
    });
}

export function registerResultCommand(program: Command): void {
  program
    .command('result <id>')
    .description("wait for a run to end and print its output")
    .addHelpText('after', '\nExamples:\n  cadre result plan-triage-1a2b3c\n  cadre result plan-triage-1a2b3c --json')
    .option('--json', 'print the final diagnostics as JSON')
    .action(async (id: string, opts: { json?: boolean }) => {
      await withRun(id, async (client) => {
        const d = await client.result(id);
        if (opts.json) out(JSON.stringify(d, null, 2));
        else if (d.status === 'completed') out(JSON.stringify(d.output ?? null, null, 2));
        else out(renderDiagnostics(id, d));
        process.exitCode = exitCodeOf(d.status);
      });
    });
}
