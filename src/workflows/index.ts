/** The workflow bundle's entry point: every workflow a cadre worker runs. */
import { setWorkflowOptions, workflowInfo } from '@temporalio/workflow';
import { runPlan } from './plan/run-plan';
import { runItems } from './plan/run-items';
import { agentTask } from './agent/agent-task';
import { session } from './session/session';

export { runPlan, runItems, agentTask, session };

// Worker Versioning (CADRE_BUILD_ID; docs/operations.md, Rolling upgrades), ignored by unversioned
// workers. A plan run and its forEach chunks stay on the build they started on. What may last days
// moves to the current build, which replays it through cadre's patches: a team run (the client
// marks it in the memo), agents (an approval may take a day) and sessions.
setWorkflowOptions(() => ({ versioningBehavior: workflowInfo().memo?.team === true ? 'AUTO_UPGRADE' : 'PINNED' }), runPlan);
setWorkflowOptions({ versioningBehavior: 'PINNED' }, runItems);
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, agentTask);
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, session);
