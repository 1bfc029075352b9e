/** The workflow bundle of the benchmark worker: cadre's workflows plus the hand-written baseline. */
export { runPlan } from '../src/workflows';
export { baselineSteps } from './baseline-workflow';
export { session } from '../src/workflows/session/session';
export { agentTask } from '../src/workflows/agent/agent-task';
export { baselineSession } from './baseline-session';
