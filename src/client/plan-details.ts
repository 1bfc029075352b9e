/**
 * What a run is called and shows before it starts: its default id (from the plan and its inputs,
 * so a retried start does not run it twice) and the details the Web UI shows for it.
 */
import type { CompiledPlan } from '../plan-format/types';
import { describeAction } from '../plan-format/kinds';
import { brief } from '../plan-format/kinds/kind';
import { utf8Length } from '../plan-format/limits';
import { formatCount } from '../plan-format/text';
import { FRAME_SLACK } from '../protocol/details';

/** Budget of the details, well under Temporal's limit for static details (DETAILS_LIMIT_BYTES). */
const DETAILS_BUDGET_BYTES = 8 * 1024;
const DETAILS_INPUTS = 20;


/**
 * The Markdown the Web UI shows as a run's details: a summary of the plan in a form people
 * read. Long texts are shortened (`…`) and long plans cut to a budget; the full plan is the
 * run's input, so it travels once.
 */
export function planDetails(plan: CompiledPlan, inputs: Record<string, unknown>): string {
  const lines = [`**plan ${plan.name}** in \`${brief(plan.workspace, 120)}\``];
  const given = Object.entries(inputs);
  if (given.length > 0) {
    lines.push('', 'Inputs:', '', ...given.slice(0, DETAILS_INPUTS).map(([k, v]) => `- \`${brief(k, 40)}\` = \`${brief(JSON.stringify(v) ?? 'null', 80)}\``));
    if (given.length > DETAILS_INPUTS) lines.push(`- … and ${given.length - DETAILS_INPUTS} more inputs`);
  }
  lines.push('', 'Steps:', '');
  const more = (shown: number) => `- … and ${formatCount(plan.steps.length - shown)} more steps (the run's input holds the whole plan)`;
  let bytes = utf8Length(lines.join('\n'));
  for (const [i, step] of plan.steps.entries()) {
    const action = describeAction(step.action);
    const needs = step.needs.length > 5 ? `${step.needs.slice(0, 5).join(', ')} and ${step.needs.length - 5} more` : step.needs.join(', ');
    const extras = [step.needs.length > 0 && `after ${needs}`, step.when && `when ${brief(step.when, 80)}`, step.forEach !== undefined && 'for each item']
      .filter(Boolean)
      .join('; ');
    const line = `- \`${step.id}\`: ${action}${extras ? ` (${extras})` : ''}`;
    if (bytes + utf8Length(line) + utf8Length(more(i)) + 2 + utf8Length(FRAME_SLACK) + 2 > DETAILS_BUDGET_BYTES) {
      lines.push(more(i));
      break;
    }
    lines.push(line);
    bytes += utf8Length(line) + 1;
  }
  lines.push('', FRAME_SLACK);
  return lines.join('\n');
}
