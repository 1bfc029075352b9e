/**
 * What may exist by the time a step runs. A repository, script or program that is missing now is
 * only possibly missing when a step that runs before it (upstream in the plan's DAG: `dependsOn`
 * and the steps its templates read) may write files: a shell step, `fs.write`, a git tool, a custom
 * tool, or any agent (its tools, or its role's, may write). Steps that may run at the same time do
 * not count: nothing says they finish first.
 */
import { upstreamOf } from '../plan-format/graph';
import type { CompiledPlan, CompiledStep } from '../plan-format/types';

/** Built-in tools that write nothing. */
const READ_ONLY_TOOLS = new Set(['fs.read', 'http.request', 'sleep', 'git.status']);
/** Steps named in a message, at most. */
const NAMED = 3;

export function mayWriteFiles(step: CompiledStep): boolean {
  if (step.action.kind === 'agent') return true;
  if (step.action.kind !== 'tool') return false;
  return !READ_ONLY_TOOLS.has(step.action.tool) && !step.action.tool.startsWith('code.');
}

/** The steps that run before `id` and may write files, in plan order: computed per step asked, as few steps have findings. */
export function writersBefore(plan: CompiledPlan): (id: string) => string[] {
  const needs = new Map(plan.steps.map((step) => [step.id, step.needs]));
  const writers = plan.steps.filter(mayWriteFiles).map((step) => step.id);
  return (id) => {
    const upstream = upstreamOf(id, needs);
    return writers.filter((writer) => upstream.has(writer));
  };
}

/** `step "repo" runs before it and may create it`, naming a few. */
export function mayCreate(writers: string[]): string {
  const named = writers.slice(0, NAMED).map((id) => `"${id}"`).join(', ');
  const more = writers.length > NAMED ? ` and ${writers.length - NAMED} more` : '';
  return writers.length === 1 ? `step ${named} runs before it and may create it` : `steps ${named}${more} run before it and may create it`;
}
