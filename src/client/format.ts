/** Human-readable rendering of diagnostics for the CLI. */
import { describeRunSpend, describeSpend } from '../protocol/budget';
import { LIMIT_WORDS, type LimitName, runLimits } from '../plan-format/limits';
import { formatMs } from '../plan-format/duration';
import type { AgentSummary, ApprovalDetail, ConsultationRecord, Diagnostics, StepRecord, Waiting, WorkerRecord } from '../protocol/definitions';
import { STEP_MARKS, describeWait } from '../protocol/details';
import { isFinal } from './run-status';

export function stepLine(step: StepRecord): string {
  const parts = [`${STEP_MARKS[step.status]} ${step.id.padEnd(16)} ${step.status.padEnd(9)}`];
  if (step.attempts > 0) parts.push(`${step.attempts} attempt${step.attempts === 1 ? '' : 's'}`);
  if (step.items) parts.push(`${step.items.completed}/${step.items.total} items`);
  if (step.agent?.turns !== undefined) parts.push(agentLine(step.agent));
  if (step.durationMs !== undefined) parts.push(formatMs(step.durationMs));
  if (step.retrying) {
    parts.push(`(attempt ${step.retrying.attempt}${step.retrying.lastFailure ? `, last error: ${step.retrying.lastFailure}` : ''})`);
  }
  if (step.note) parts.push(`(${step.note})`);
  if (step.error && step.status !== 'completed') parts.push(`— ${step.error}`);
  return parts.join('  ');
}

function agentLine(agent: AgentSummary): string {
  const tokens = agent.usage ? agent.usage.inputTokens + agent.usage.outputTokens : 0;
  const running = agent.running?.length ? `, running ${agent.running.join(', ')}` : '';
  const budget = agent.budget ? `, budget: ${describeSpend(agent.budget.limits, agent.budget.spent)}` : '';
  return `${agent.turns} turn${agent.turns === 1 ? '' : 's'}, ${agent.toolCalls ?? 0} tool calls, ${tokens} tokens${budget}${running}`;
}

/** A team worker: its state, what it runs now, and where it works. */
export function workerLine(w: WorkerRecord): string {
  const parts = [`◆ ${w.step.padEnd(16)} ${w.state.padEnd(19)}`];
  if (w.role) parts.push(`role ${w.role}`);
  if (w.running?.length) parts.push(`running ${w.running.join(', ')}`);
  const working = w.state !== 'completed' && w.state !== 'error' && w.state !== 'cancelled';
  if (w.worktree && working) parts.push(`in ${w.worktree}`);
  if (w.reason && w.state !== 'running' && w.state !== 'completed') parts.push(`— ${w.reason}`);
  return parts.join('  ');
}

/** A question a worker asked its team, and who answered it. */
export function consultationLine(c: ConsultationRecord): string {
  const who = c.outcome === 'answered' ? `the ${c.to} answered${c.confidence !== undefined ? ` (confidence ${c.confidence})` : ''}` : c.outcome === 'cached' ? 'answered as before' : c.outcome === 'escalated' ? `sent to a person${c.to ? ` (the ${c.to} was not sure)` : ''}` : c.outcome === 'cut' ? 'cut' : `asking the ${c.to ?? 'team'}`;
  return `? ${c.from} asked "${c.question}": ${who}${c.note && c.outcome === 'cut' ? ` — ${c.note}` : ''}`;
}

export function answerHint(workflowId: string, w: Waiting): string {
  const { question, command } = describeWait(workflowId, w);
  return `  ? ${w.id}: ${question}${w.detail ? `\n${approvalDetail(w.detail)}` : ''}\n    answer with: ${command}`;
}

/** What an approval would let run, whole: the command (every line of it), what each part of it runs and what decided. */
export function approvalDetail(detail: ApprovalDetail): string {
  const lines = [`    why it asks: ${detail.reason}`];
  if (detail.command !== undefined) {
    lines.push('    command:', ...detail.command.split('\n').map((line) => `      │ ${line}`));
    if (detail.segments && detail.segments.length > 0) {
      lines.push('    it runs:', ...detail.segments.map((s) => `      ${s.decision.padEnd(5)} ${oneLine(s.text)}  (${s.rule})`));
    }
  } else lines.push(`    arguments: ${detail.args}`);
  return lines.join('\n');
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ⏎ ');
}

export function renderDiagnostics(workflowId: string, d: Diagnostics): string {
  const lines = [`${d.plan} (${workflowId}): ${d.status}${d.paused && d.status !== 'paused' ? ' (paused)' : ''}, ${formatMs(d.elapsedMs)}`];
  if (d.reason) lines.push(`  why: ${d.reason}`);
  if (d.forkedFrom) lines.push(`  forked from ${d.forkedFrom.run} at step ${d.forkedFrom.step} (its steps that do not depend on it were restored, not run again)`);
  if (d.host) lines.push(`  on host ${d.host} (its workspace's activities run there)`);
  if (d.clone) lines.push(`  workspace cloned from ${d.clone.repo} to ${d.clone.path}${d.clone.removed ? ' (removed)' : d.clone.kept ? ` (kept: ${d.clone.kept})` : ''}; its work is pushed to ${d.clone.branch} (last ${d.clone.commit.slice(0, 12)})`);
  for (const move of d.hostMoves ?? []) lines.push(`  moved from host ${move.from} to ${move.to} at ${move.at} (${move.reason === 'lost' ? `${move.from} was lost; ${move.to} cloned the run's branch` : 'cadre move'})`);
  if (d.note) lines.push(`  ${d.note}`);
  if (d.budget) lines.push(`  budget: ${describeRunSpend(d.budget)}`);
  for (const step of d.steps) lines.push(`  ${stepLine(step)}`);
  if (d.workers?.length) lines.push('  workers:', ...d.workers.map((w) => `    ${workerLine(w)}`));
  if (d.consultations?.length) lines.push('  questions:', ...d.consultations.map((c) => `    ${consultationLine(c)}`));
  for (const w of d.waiting) lines.push(answerHint(workflowId, w));
  for (const c of d.compensations) lines.push(`  ↺ compensated ${c.step}: ${c.status}${c.error ? ` — ${c.error}` : ''}`);
  const limits = limitsLine(d);
  if (limits) lines.push(limits);
  if (d.output !== undefined) lines.push(`output: ${JSON.stringify(d.output, null, 2)}`);
  return lines.join('\n');
}

/** The run's use of Temporal's per-run limits, once any is past half (docs/streaming.md, "What a run can take"). */
export function limitsLine(d: Pick<Diagnostics, 'limits' | 'continuedAsNew'>): string | undefined {
  const usage = d.limits;
  if (!usage) return undefined;
  const max = runLimits(usage.max);
  const near = (Object.keys(max) as LimitName[]).filter((name) => usage[name] >= max[name] / 2);
  if (near.length === 0) return undefined;
  const again = d.continuedAsNew ? ` (this run; it continued as new ${d.continuedAsNew} time${d.continuedAsNew === 1 ? '' : 's'})` : '';
  const each = near.map((name) => `${usage[name].toLocaleString('en-US')} of ${max[name].toLocaleString('en-US')} ${LIMIT_WORDS[name]} (${Math.floor((100 * usage[name]) / max[name])}%)`);
  return `  limits: ${each.join(', ')}${again}: Temporal's per-run limits, see docs/streaming.md`;
}

/** Prints what changed between two diagnostics: step transitions, new questions, the end. */
export class ProgressPrinter {
  private seen = new Map<string, string>();
  private asked = new Set<string>();
  private status = '';

  constructor(
    private readonly workflowId: string,
    private readonly write: (line: string) => void,
  ) {}

  update(d: Diagnostics): void {
    for (const step of d.steps) {
      const key = `${step.status}|${step.attempts}|${step.items?.completed ?? ''}|${step.retrying?.attempt ?? ''}|${step.agent?.turns ?? ''}|${step.agent?.toolCalls ?? ''}`;
      if (this.seen.get(step.id) !== key) {
        if (step.status !== 'pending' || this.seen.has(step.id)) this.write(`  ${stepLine(step)}`);
        this.seen.set(step.id, key);
      }
    }
    for (const worker of d.workers ?? []) {
      const key = `${worker.state}|${worker.running?.join(',') ?? ''}`;
      if (this.seen.get(`worker:${worker.workflowId}`) !== key) {
        this.write(`  ${workerLine(worker)}`);
        this.seen.set(`worker:${worker.workflowId}`, key);
      }
    }
    for (const w of d.waiting) {
      const key = `${w.id}@${w.since}`;
      if (!this.asked.has(key)) {
        this.asked.add(key);
        this.write(answerHint(this.workflowId, w));
      }
    }
    if (d.status !== this.status) {
      if (d.status === 'paused' || isFinal(d.status)) this.write(`${d.plan}: ${d.status}${d.note ? ` (${d.note})` : ''}`);
      this.status = d.status;
    }
  }
}
