/** `cadre stats`: what past runs took, step by step, from the analytics database the workers write. */
import { formatUsd } from '../providers/cost';
import { type Command, InvalidArgumentError } from 'commander';
import { type AnalyticsTarget, analyticsTarget, describeTarget, withAnalytics } from '../analytics/database';
import { LockBusyError } from '../analytics/lock';
import { type PlanStats, type RunEstimate, estimateRun, readStats } from '../analytics/stats';
import { durationMs, formatMs, isDuration } from '../plan-format/duration';
import type { Diagnostics } from '../protocol/definitions';
import { CadreError } from '../errors/cadre-error';
import { isFinal } from './run-status';

const out = (line: string): void => void process.stdout.write(`${line}\n`);
const info = (line: string): void => void process.stderr.write(`${line}\n`);

/** A reader waits this long for a worker that is writing to the embedded database. */
const READ_WAIT_MS = 30_000;

export function registerStatsCommand(program: Command): void {
  program
    .command('stats')
    .description('per-step p50/p95 durations, failure and retry rates, and waits for people, from finished runs (CADRE_DATABASE_URL, or the embedded database in CADRE_ANALYTICS_DIR or ~/.cadre/analytics)')
    .option('--plan <name>', 'only this plan')
    .option('--since <duration>', 'only runs that ended in this past time, e.g. 7d or 12h', sinceOption)
    .option('--json', 'print JSON')
    .addHelpText('after', '\nExamples:\n  cadre stats\n  cadre stats --plan triage --since 7d\n  CADRE_DATABASE_URL=postgres://cadre@db/cadre cadre stats --json')
    .action(async (opts: { plan?: string; since?: Date; json?: boolean }) => {
      const target = analyticsTarget();
      const stats = await readAnalytics(target, (query) => readStats(query, { ...(opts.plan && { plan: opts.plan }), ...(opts.since && { since: opts.since }) }));
      if (opts.json) return out(JSON.stringify(stats ?? [], null, 2));
      if (!stats || stats.length === 0) {
        const which = opts.plan ? ` of plan "${opts.plan}"` : '';
        return out(`no finished runs${which} recorded in ${describeTarget(target)}`);
      }
      out(stats.map(renderPlanStats).join('\n\n'));
    });
}

/** `--since 7d`: the moment that long ago. */
export function sinceOption(value: string): Date {
  if (!isDuration(value)) throw new InvalidArgumentError(`expected a duration like 7d, 12h or 30m, got "${value}"`);
  return new Date(Date.now() - durationMs(value));
}

/** Reads the analytics database, telling the user when a worker holds the embedded one. */
export async function readAnalytics<T>(target: AnalyticsTarget, read: Parameters<typeof withAnalytics<T>>[2], waitMs = READ_WAIT_MS): Promise<T | undefined> {
  if (target.kind === 'off') throw new CadreError('run analytics are off (CADRE_ANALYTICS=off)');
  try {
    return await withAnalytics(target, { waitMs, onWait: (pid) => info(`waiting for process ${pid}, which has the analytics database open…`) }, read);
  } catch (err) {
    if (err instanceof LockBusyError) throw new CadreError(`${err.message}: still busy after ${formatMs(waitMs)}; try again`);
    throw new CadreError(`cannot read the analytics database at ${describeTarget(target)}: ${(err as Error).message}`);
  }
}

export function renderPlanStats(p: PlanStats): string {
  const lines = [`plan ${p.plan}: ${p.runs} run${p.runs === 1 ? '' : 's'} (${p.completed} completed, ${p.failed} failed, ${p.cancelled} cancelled)${p.p50Ms !== undefined ? `; completed in p50 ${formatMs(p.p50Ms)}, p95 ${formatMs(p.p95Ms as number)}` : ''}`];
  const width = Math.max(4, ...p.steps.map((s) => s.step.length));
  const toolWidth = Math.max(4, ...p.steps.map((s) => s.tool.length));
  lines.push(`  ${'STEP'.padEnd(width)}  ${'TOOL'.padEnd(toolWidth)}  ${'RUNS'.padStart(5)}  ${'P50'.padStart(8)}  ${'P95'.padStart(8)}  ${'FAILED'.padStart(7)}  ${'RETRIED'.padStart(7)}  SKIPPED`);
  for (const s of p.steps) {
    const cells = [s.step.padEnd(width), s.tool.padEnd(toolWidth), String(s.runs).padStart(5), duration(s.p50Ms).padStart(8), duration(s.p95Ms).padStart(8), percent(s.failureRate).padStart(7), percent(s.retryRate).padStart(7), String(s.skipped)];
    lines.push(`  ${cells.join('  ')}`);
  }
  if (p.humanWaits.length > 0) {
    lines.push('  waits for people:');
    for (const w of p.humanWaits) {
      lines.push(`    ${w.step} (${w.kind}): ${w.waits} wait${w.waits === 1 ? '' : 's'}, p50 ${formatMs(w.p50Ms)}, p95 ${formatMs(w.p95Ms)}, ${w.answered} answered, ${w.timedOut} timed out`);
    }
  }
  if (p.spend.length > 0) {
    lines.push('  spend by day and model:');
    for (const x of p.spend) {
      const cost = x.unpriced === x.steps ? 'no price' : `${formatUsd(x.costUsd)}${x.unpriced > 0 ? ` (${x.unpriced} steps unpriced)` : ''}`;
      lines.push(`    ${x.day} ${x.model}: ${x.steps} step${x.steps === 1 ? '' : 's'}, ${x.inputTokens} tokens in, ${x.outputTokens} out, ${cost}`);
    }
  }
  return lines.join('\n');
}

function duration(value: number | undefined): string {
  return value === undefined ? '-' : formatMs(value);
}

function percent(rate: number | undefined): string {
  return rate === undefined ? '-' : `${Math.round(rate * 100)}%`;
}

/** The ETA line of `cadre watch`: when the run should end if it takes as long as its plan's past runs. */
export function etaLine(estimate: RunEstimate, startedAt: string, elapsedMs: number, now = Date.now()): string {
  const basis = `median of ${estimate.runs} past completed run${estimate.runs === 1 ? '' : 's'} of ${estimate.plan}: ${formatMs(estimate.p50Ms)}`;
  const left = estimate.p50Ms - elapsedMs;
  if (left <= 0) return `ETA: running longer than usual (${basis}; p95 ${formatMs(estimate.p95Ms)})`;
  const end = new Date(Date.parse(startedAt) + estimate.p50Ms);
  const at = Number.isNaN(end.getTime()) ? new Date(now + left) : end;
  return `ETA: ${at.toLocaleTimeString()}, about ${formatMs(left)} left (${basis})`;
}

/** The estimate for a plan, or undefined when there is none to be had quickly (nothing recorded, a busy database). */
export async function lookUpEstimate(plan: string, target = analyticsTarget()): Promise<RunEstimate | undefined> {
  if (target.kind === 'off') return undefined;
  try {
    return await withAnalytics(target, { waitMs: 5000 }, (query) => estimateRun(query, plan));
  } catch {
    return undefined;
  }
}

/**
 * Prints the ETA once, when the first diagnostics of an unfinished run arrive; `done` waits for the
 * lookup, so the embedded database is let go before the command exits.
 */
export function etaReporter(write: (line: string) => void, lookUp = lookUpEstimate): { seen(d: Diagnostics): void; done(): Promise<void> } {
  let lookup: Promise<void> | undefined;
  let ended = false;
  return {
    seen(d) {
      if (lookup || isFinal(d.status)) return;
      const seenAt = Date.now();
      lookup = lookUp(d.plan).then((estimate) => {
        if (estimate && !ended) write(etaLine(estimate, d.startedAt, d.elapsedMs + (Date.now() - seenAt)));
      });
    },
    async done() {
      ended = true;
      await lookup;
    },
  };
}
