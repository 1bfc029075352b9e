/** The Markdown a run shows as "Current Details" in the Temporal Web UI. Pure. */
import type { PlanStatus, StepRecord, Waiting } from './definitions';

export const STEP_MARKS: Record<StepRecord['status'], string> = {
  pending: '·',
  running: '▶',
  waiting: '?',
  completed: '✓',
  failed: '✗',
  skipped: '↷',
  cancelled: '⊘',
};

export function currentDetails(workflowId: string, status: PlanStatus, steps: StepRecord[], waiting: Waiting[]): string {
  const done = steps.filter((s) => s.status === 'completed' || s.status === 'skipped').length;
  const lines = [`**${status}** · ${done}/${steps.length} steps done`];
  if (waiting.length > 0) {
    lines.push('', 'Waiting on a human:');
    for (const w of waiting) {
      const example = w.choices?.[0] ?? '"…"';
      lines.push(`- \`${w.id}\`: ${w.prompt}${w.choices ? ` [${w.choices.join('/')}]` : ''} — \`cadre answer ${workflowId} ${w.id} ${example}\``);
    }
  }
  lines.push('', 'Steps:');
  for (const s of steps) lines.push(`- ${STEP_MARKS[s.status]} \`${s.id}\` ${s.status}${s.error && s.status !== 'completed' ? ` — ${s.error}` : ''}`);
  return lines.join('\n');
}
