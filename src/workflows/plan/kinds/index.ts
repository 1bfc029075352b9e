/** The step kinds a plan run knows, by the name of their action: adding a kind is adding its module here. */
import type { StepAction } from '../../../plan-format/types';
import { agentKind, decideKind } from './agent';
import { askKind } from './ask';
import { echoKind } from './echo';
import type { StepKind } from './kind';
import { sleepKind } from './sleep';
import { toolKind } from './tool';

export type { PlanRunContext, StepKind } from './kind';

const STEP_KINDS: Record<StepAction['kind'], StepKind> = { tool: toolKind, ask: askKind, agent: agentKind, decide: decideKind, echo: echoKind };

/** The kind that runs an action; `sleep` is a tool to plans, and a timer to the engine. */
export function kindOf(action: StepAction): StepKind {
  return action.kind === 'tool' && action.tool === 'sleep' ? sleepKind : STEP_KINDS[action.kind];
}
