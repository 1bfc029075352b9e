/** The Markdown a run shows as "Current Details" in the Temporal Web UI. Pure. */
import type { PlanStatus, StepRecord, StepStatus, Waiting } from './definitions';

export const STEP_MARKS: Record<StepRecord['status'], string> = {
  pending: '·',
  running: '▶',
  waiting: '?',
  completed: '✓',
  failed: '✗',
  skipped: '↷',
  cancelled: '⊘',
};

/**
 * The Web UI sizes the frame it renders details in by the body's height, without the page's
 * margin, so the last line or so is cut off. A last, blank paragraph (a no-break space) is what
 * gets cut instead.
 */
export const FRAME_SLACK = '\u00a0';

/** Plans up to this many steps list every step; longer ones list only what is moving or went wrong. */
export const DETAILS_ALL_STEPS_UP_TO = 40;
const MAX_LISTED = 20;
const MAX_LINE_CHARS = 300;

/**
 * A question as one line (`Archive 4 emails? [yes/no]`), the command that answers it, and the
 * `answer` update's (or signal's) JSON for any other client: the Web UI, `temporal`, an SDK.
 */
export function describeWait(workflowId: string, w: Waiting): { question: string; command: string; update: string } {
  const question = `${w.prompt}${w.choices ? ` [${w.choices.join('/')}]` : ''}`;
  const value = w.kind === 'approval' ? 'approve' : (w.choices?.[0] ?? 'your answer');
  const update = JSON.stringify({ waitId: w.id, value });
  if (w.kind === 'host') return { question, command: `cadre move ${workflowId} --to <host>  (\`cadre workers\` lists the hosts)`, update: JSON.stringify({ to: '<host>' }) };
  if (w.kind === 'approval') return { question, command: `cadre approve ${workflowId} ${w.id} [--always]  (or: cadre deny ${workflowId} ${w.id} --reason "...")`, update };
  return { question, command: `cadre answer ${workflowId} ${w.id} ${w.choices?.[0] ?? '"your answer"'}`, update };
}

export interface DetailsInput {
  workflowId: string;
  status: PlanStatus;
  total: number;
  counts: Record<StepStatus, number>;
  /** Every step for short plans; otherwise the running, waiting and failed ones. */
  steps: StepRecord[];
  waiting: Waiting[];
  /** A plan's budget, as spent so far. */
  budget?: string;
}

export function currentDetails({ workflowId, status, total, counts, steps, waiting, budget }: DetailsInput): string {
  const done = counts.completed + counts.skipped;
  const lines = [`**${status}** · ${done}/${total} steps done`];
  if (budget) lines.push('', `Budget: ${clip(budget)}`);
  if (waiting.length > 0) {
    // Blank lines around lists: the Web UI's Markdown starts a list only after one.
    lines.push('', 'Waiting on a human:', '');
    for (const w of waiting.slice(0, MAX_LISTED)) {
      const { question, command, update } = describeWait(workflowId, w);
      lines.push(`- \`${w.id}\`: ${clip(question)} — \`${clip(command)}\`, or the \`answer\` update or signal with \`${clip(update)}\``);
    }
    if (waiting.length > MAX_LISTED) lines.push(`- … and ${waiting.length - MAX_LISTED} more (\`cadre status ${workflowId}\`)`);
    lines.push(...approvalBlocks(workflowId, waiting.slice(0, MAX_LISTED)));
  }
  if (total > DETAILS_ALL_STEPS_UP_TO) {
    const tally = (Object.keys(STEP_MARKS) as StepStatus[]).filter((s) => counts[s] > 0).map((s) => `${STEP_MARKS[s]} ${counts[s]} ${s}`);
    lines.push('', `Steps: ${tally.join(' · ')}`, '');
  } else lines.push('', 'Steps:', '');
  for (const s of steps.slice(0, total > DETAILS_ALL_STEPS_UP_TO ? MAX_LISTED : steps.length)) {
    // A step's note says why it is as it is: restored from another run (a fork), skipped, cancelled, run again.
    lines.push(clip(`- ${STEP_MARKS[s.status]} \`${s.id}\` ${s.status}${s.note ? ` (${s.note})` : ''}${s.error && s.status !== 'completed' ? ` — ${s.error}` : ''}`));
  }
  if (total > DETAILS_ALL_STEPS_UP_TO && steps.length > MAX_LISTED) lines.push(`- … and ${steps.length - MAX_LISTED} more`);
  lines.push('', FRAME_SLACK);
  return lines.join('\n');
}

/** Whole commands of approvals shown at most up to this many characters in all; past it, `cadre status` shows them. */
const MAX_APPROVAL_TEXT = 512 * 1024;

/**
 * Each approval's call, whole, under the list: a person approves what they read, so nothing of a
 * command is cut here (the line above is only its first words).
 */
function approvalBlocks(workflowId: string, waiting: Waiting[]): string[] {
  const lines: string[] = [];
  let budget = MAX_APPROVAL_TEXT;
  for (const w of waiting) {
    if (!w.detail) continue;
    const shown = w.detail.command ?? w.detail.args;
    if (shown.length > budget) {
      lines.push('', `\`${w.id}\` (${w.detail.tool}, ${shown.length} characters): read it whole with \`cadre status ${workflowId}\``);
      continue;
    }
    budget -= shown.length;
    const fence = '`'.repeat(Math.max(3, longestRun(shown, '`') + 1));
    lines.push('', `\`${w.id}\` would run (${w.detail.tool}; ${w.detail.reason}):`, '', `${fence}${w.detail.command !== undefined ? 'sh' : 'json'}`, shown, fence);
    if (w.detail.segments?.length) {
      lines.push('', ...w.detail.segments.map((seg) => `- ${seg.decision} \`${clip(seg.text.replace(/`/g, "'").replace(/\s*\n\s*/g, ' ⏎ '))}\` (${seg.rule})`));
    }
  }
  return lines;
}

function longestRun(text: string, char: string): number {
  let longest = 0;
  let run = 0;
  for (const c of text) {
    run = c === char ? run + 1 : 0;
    longest = Math.max(longest, run);
  }
  return longest;
}

/** Details are a glance, not a record: long prompts and errors are shortened here, visibly, and kept whole in diagnostics. */
function clip(line: string): string {
  return line.length > MAX_LINE_CHARS ? `${line.slice(0, MAX_LINE_CHARS)}… (${line.length - MAX_LINE_CHARS} more characters in \`cadre status\`)` : line;
}
