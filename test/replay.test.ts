import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { DeterminismViolationError } from '@temporalio/workflow';
import { Worker } from '@temporalio/worker';
import { auditSinks } from '../src/worker/audit-log';
import { installConciseLogging } from '../src/worker/logging';
import * as bundle from '../src/workflows';
import { AGENT_TASK_WORKFLOW } from '../src/protocol/agent-task';

const dir = path.join(__dirname, 'histories');
/** Workflows whose children's ids derive from their own replay under the id they were recorded with. */
const RECORDED_IDS: Record<string, string> = {
  'team-worker': 'run-plan-team/impl',
  'team-worker-watch': 'run-plan-team-watch/impl',
  'team-worker-reports': 'run-plan-team-reports/impl',
  'team-worker-baseline': 'run-plan-baselines/impl',
  'run-plan-continued-last': 'run-plan-continued',
  // Recorded by fleet.test.ts (a host lost mid-run, then `cadre move`).
  'run-plan-host-moved': 'lost-run-32725-mx1olre9-5',
  'agent-task-host-moved': 'lost-run-32725-mx1olre9-5/agent',
  // Recorded by faults/team-stuck.test.ts (a team worker's process killed mid-tool, reported blocked).
  'agent-task-stuck-recorded': 'team-stuck-30107-mx1vnfyy-2/w',
  // Recorded by fleet.test.ts (a clone's host lost mid-step: the run moved itself).
  'run-plan-clone-moved': 'cloned-run-23075-mx1v935q-22',
  // Recorded by forks.test.ts (forked at a decision, an agent's output set).
  'run-plan-fork': 'fork-6356-mx294d9y-3',
  // The same, with a worktree step restored and the last step in the fork's own worktree made from its snapshot.
  'run-plan-fork-worktree': 'fork-16214-mx2ezhhz-3',
  // Recorded by budgets.test.ts (an agent held at its budget's cap, then extended by a person).
  'agent-task-budget': 'budgeted-25425-mx2ga91b-3/work',
  // A plan run that aborted on a step its budget stopped: it ended budget_exhausted.
  'run-plan-budget-exhausted': 'budgeted-13297-mx2hm3b4-2',
  // A plan's budget: a runaway team and its subtasks leasing from the run, recalled, then stopped (budget_exhausted).
  'run-plan-team-budget': 'runaway-team-23931-mx2m0r3g-3',
  // An agent's lease on its plan's budget: asked for more, held at the cap, granted after a person extended it.
  'agent-task-lease': 'asked-budget-26937-mx2m13ku-3/work',
};
const histories = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .map((file) => file.replace(/\.json$/, ''))
  .map((name) => ({ name, workflowId: RECORDED_IDS[name] ?? name, history: historyFromJSON(JSON.parse(readFileSync(path.join(dir, `${name}.json`), 'utf8'))) }));

beforeAll(() => installConciseLogging('ERROR'));

test('children started by type name name a workflow of the bundle', () => {
  expect(Object.keys(bundle)).toContain(AGENT_TASK_WORKFLOW);
  expect(bundle.agentTask.name).toBe(AGENT_TASK_WORKFLOW);
});

describe('replay of recorded runPlan histories', () => {
  test('there are recorded histories to replay', () => {
    expect(histories.map((h) => h.name).sort()).toEqual([
      'agent-task',
      'agent-task-budget',
      'agent-task-command-rules',
      'agent-task-conversation-chain',
      'agent-task-decide',
      'agent-task-host-moved',
      'agent-task-lease',
      'agent-task-own-stream',
      'agent-task-streamed',
      'agent-task-stuck-recorded',
      'agent-task-turn-guards',
      'agent-task-workspace-host',
      'run-items-chunk',
      'run-items-lean',
      'run-plan-agent-streams',
      'run-plan-agents',
      'run-plan-analytics',
      'run-plan-analytics-cancelled',
      'run-plan-baseline',
      'run-plan-baselines',
      'run-plan-budget-exhausted',
      'run-plan-cancelled',
      'run-plan-clone-moved',
      'run-plan-command-rules',
      'run-plan-completed',
      'run-plan-continued',
      'run-plan-continued-last',
      'run-plan-conversation-chain',
      'run-plan-document',
      'run-plan-foreach-chunk-timeout',
      'run-plan-foreach-chunks',
      'run-plan-fork',
      'run-plan-fork-worktree',
      'run-plan-hardened',
      'run-plan-host-moved',
      'run-plan-lean-items',
      'run-plan-lean-steps',
      'run-plan-status-as-started',
      'run-plan-step-activity-ids',
      'run-plan-streamed',
      'run-plan-team',
      'run-plan-team-budget',
      'run-plan-team-reports',
      'run-plan-team-watch',
      'run-plan-turn-guards',
      'run-plan-visible-waits',
      'run-plan-workspace-host',
      'run-plan-worktrees',
      'session-after-continue',
      'session-baseline-after-continue',
      'session-baseline-first-run',
      'session-first-run',
      'session-followed-after-continue',
      'session-followed-first-run',
      'session-host-moved',
      'session-own-events-after-continue',
      'session-own-events-first-run',
      'session-streamed-after-continue',
      'session-streamed-first-run',
      'team-specialist',
      'team-subtask',
      'team-subtask-baseline',
      'team-subtask-reports',
      'team-subtask-watch',
      'team-worker',
      'team-worker-baseline',
      'team-worker-reports',
      'team-worker-watch',
    ]);
  });

  test('every recorded history replays on the current workflow code', async () => {
    const results = [];
    // The worker's sinks, as in production: the audit sink does not run on replay.
    const sinks = auditSinks(mkdtempSync(path.join(os.tmpdir(), 'cadre-replay-audit-')));
    for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string }, sinks }, histories)) {
      results.push(result);
    }
    expect(results.map((r) => [r.workflowId, r.error?.message])).toEqual(histories.map((h) => [h.workflowId, undefined]));
  });

  test('a changed workflow is caught as a determinism violation', async () => {
    const completed = histories.find((h) => h.workflowId === 'run-plan-completed')!;
    await expect(
      Worker.runReplayHistory({ workflowsPath: require.resolve('./support/changed-workflows') }, completed.history, completed.workflowId),
    ).rejects.toThrow(DeterminismViolationError);
  });
});
