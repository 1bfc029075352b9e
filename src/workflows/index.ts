/** The workflow bundle's entry point: every workflow a cadre worker runs. */
export { runPlan } from './run-plan';
export { runItems } from './run-items';
export { agentTask } from './agent-task';
export { session } from './session';
