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

/** A question as one line (`Archive 4 emails? [yes/no]`) and the command that answers it. */
export function describeWait(workflowId: string, w: Waiting): { question: string; command: string } {
  return {
    question: `${w.prompt}${w.choices ? ` [${w.choices.join('/')}]` : ''}`,
    command: `cadre answer ${workflowId} ${w.id} ${w.choices?.[0] ?? '"your answer"'}`,
  };
}

export function currentDetails(workflowId: string, status: PlanStatus, steps: StepRecord[], waiting: Waiting[]): string {
  const done = steps.filter((s) => s.status === 'completed' || s.status === 'skipped').length;
  const lines = [`**${status}** · ${done}/${steps.length} steps done`];
  if (waiting.length > 0) {
    lines.push('', 'Waiting on a human:');
    for (const w of waiting) {
      const { question, command } = describeWait(workflowId, w);
      lines.push(`- \`${w.id}\`: ${question} — \`${command}\``);
    }
  }
  lines.push('', 'Steps:');
  for (const s of steps) lines.push(`- ${STEP_MARKS[s.status]} \`${s.id}\` ${s.status}${s.error && s.status !== 'completed' ? ` — ${s.error}` : ''}`);
  return lines.join('\n');
}
