/** The workflow bundle's entry point: every workflow a cadre worker runs. */
import type { VersioningBehavior } from '@temporalio/common';
import { setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
import { runPlan } from './plan/run-plan';
import { runItems } from './plan/run-items';
import { agentTask } from './agent/agent-task';
import { session } from './session/session';

export { runPlan, runItems, agentTask, session };

/**
 * Worker Versioning (CADRE_BUILD_ID; docs/operations.md, Rolling upgrades). A plan run and its
 * forEach chunks stay on the build they started on. What may last days moves to the current build,
 * which replays it through cadre's patches: a team run (the client marks it in the memo), agents
 * (an approval may take a day) and sessions. Said only on a versioned worker (one with a
 * deployment's name; an unversioned one has a build id of its own): a run that says it on an
 * unversioned worker has its queries go unanswered.
 */
function onVersioned(behavior: (memo: Record<string, unknown>) => VersioningBehavior) {
  return () => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: behavior(workflowInfo().memo ?? {}) } : {});
}

setWorkflowOptions(onVersioned((memo) => (memo.team === true ? 'AUTO_UPGRADE' : 'PINNED')), runPlan);
setWorkflowOptions(onVersioned(() => 'PINNED'), runItems);
setWorkflowOptions(onVersioned(() => 'AUTO_UPGRADE'), agentTask);
setWorkflowOptions(onVersioned(() => 'AUTO_UPGRADE'), session);
