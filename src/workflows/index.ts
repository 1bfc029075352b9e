/** The workflow bundle's entry point: every workflow a cadre worker runs. */
export { runPlan } from './plan/run-plan';
export { runItems } from './plan/run-items';
export { agentTask } from './agent/agent-task';
export { session } from './session/session';
