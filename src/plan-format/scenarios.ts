/**
 * Scripted models' scenario files, as plans name them (`scripted:./scenarios/triage.yaml`, beside
 * the plan): a YAML or JSON file, symlinks followed. Anything else (`scripted:../../etc/shadow`)
 * is refused when the plan is checked, and again by the worker (providers/scripted.ts).
 */
import { realpathSync } from 'node:fs';
import path from 'node:path';
import type { PlanIssue } from './issues';
import type { CompiledPlan } from './types';

const SCRIPTED = 'scripted:';
export const SCENARIO_FILE = /\.(ya?ml|json)$/i;

/** The model fields of a compiled plan that name a scenario, with their paths. */
function scenarioModels(plan: CompiledPlan): { at: string; file: string }[] {
  const models: { at: string; model: string | undefined }[] = [
    { at: 'team.model', model: plan.team?.model },
    { at: 'team.fallbackModel', model: plan.team?.fallbackModel },
    ...plan.steps.map((step, i) => {
      const action = step.action;
      if (action.kind === 'agent') return { at: `steps[${i}].agent.model`, model: action.agent.model };
      return { at: `steps[${i}].decide.model`, model: action.kind === 'decide' ? action.decide.model : undefined };
    }),
  ];
  return models.flatMap(({ at, model }) => (model?.startsWith(SCRIPTED) ? [{ at, file: model.slice(SCRIPTED.length) }] : []));
}

export function scenarioIssues(plan: CompiledPlan): PlanIssue[] {
  return scenarioModels(plan).flatMap(({ at, file }) => {
    const resolved = realPath(file);
    if (SCENARIO_FILE.test(resolved)) return [];
    const shown = resolved === file ? path.basename(file) : `${path.basename(file)} (a link to ${path.basename(resolved)})`;
    return [{ path: at, message: `a scenario is a .yaml, .yml or .json file; ${shown} is not` }];
  });
}

/** The path with symlinks followed, as far as it exists. */
export function realPath(file: string): string {
  try {
    return realpathSync(file);
  } catch {
    const parent = path.dirname(file);
    return parent === file ? file : path.join(realPath(parent), path.basename(file));
  }
}
