/**
 * Every plan of the fuzz corpus that validates also runs: on a real server, each one completes or
 * fails with a message, and no history (a run's or its children's) holds a workflow task failed by
 * the workflow or refused for what it sent: the mark of plan data the server or SDK refused after
 * validation let it through. (Tasks the server closes for its own housekeeping are counted apart.)
 */
import { temporal } from '@temporalio/proto';
import { CadreError, SERVER_TASK_CLOSES } from '../../src/client/client';
import type { Diagnostics } from '../../src/protocol/definitions';
import type { CompiledPlan } from '../../src/plan-format/types';
import { startPlan, tempWorkspace, withWorker, type Harness } from '../support/harness';
import { runHistories } from '../support/history';
import { validatingFuzzPlans } from './plan-fuzz';

const EventType = temporal.api.enums.v1.EventType;
const AT_ONCE = 4;
const DEADLINE_MS = 15 * 60_000;
/**
 * `npm test` runs the plans of up to this many tool runs (forEach items and steps); the few that
 * probe the limits (5,000 items, 2,000 steps) take most of ten minutes of a 2-core machine, so they
 * run with CADRE_FAULTS=full (and their shapes at a smaller scale in foreach-chunks and the
 * history-limits benchmark).
 */
const CI_MAX_RUNS = 200;
const FULL = process.env.CADRE_FAULTS === 'full';

/** How many tool runs a plan asks for, as far as its text says (a templated forEach counts once). */
function toolRuns(plan: CompiledPlan): number {
  return plan.steps.reduce((n, step) => n + (Array.isArray(step.forEach) ? step.forEach.length : 1), 0);
}

/** Answers whatever the run waits for: the first choice of a question, `abort` on a failure, `skip` on a timeout. */
async function answerWaits(h: Harness, id: string, d: Diagnostics, answered: Set<string>): Promise<void> {
  for (const w of d.waiting) {
    const key = `${w.id}@${w.since}`;
    if (answered.has(key)) continue;
    answered.add(key);
    const value = w.kind === 'ask' ? (w.choices?.[0] ?? 'yes') : w.kind === 'failure' ? 'abort' : 'skip';
    await h.client.answer(id, w.id, value).catch(() => undefined); // a run that moved on meanwhile
  }
}

async function runToEnd(h: Harness, id: string): Promise<Diagnostics> {
  const answered = new Set<string>();
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    // A worker spawning thousands of shell steps can be slower than the client's 10s query bound: ask again.
    const d = await h.client.diagnostics(id).catch((err: Error) => {
      if (err instanceof CadreError && err.message.includes('no worker answered')) return undefined;
      throw err;
    });
    if (d && !['running', 'waiting', 'paused'].includes(d.status)) return d;
    if (Date.now() > deadline) throw new Error(`run ${id} did not end within ${DEADLINE_MS / 1000}s: ${d?.status ?? 'no answer'}`);
    if (d) await answerWaits(h, id, d, answered);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

const Cause = temporal.api.enums.v1.WorkflowTaskFailedCause;

/** Workflow tasks failed by the workflow or refused for what it sent, in the run's history and its children's. */
async function failedTasks(h: Harness, workflowId: string): Promise<{ failed: string[]; closedByServer: number }> {
  const failed: string[] = [];
  let closedByServer = 0;
  for (const [id, events] of await runHistories(h.client.client, workflowId)) {
    for (const event of events) {
      const attributes = event.workflowTaskFailedEventAttributes;
      if (event.eventType !== EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED || !attributes) continue;
      if (SERVER_TASK_CLOSES.has(attributes.cause ?? Cause.WORKFLOW_TASK_FAILED_CAUSE_UNSPECIFIED)) closedByServer++;
      else failed.push(`${id}: ${Cause[attributes.cause ?? 0]}: ${attributes.failure?.message ?? ''}`);
    }
  }
  return { failed, closedByServer };
}

describe('the fuzz corpus on a real server', () => {
  test('every plan that validates completes or fails with a message, and no workflow task fails', async () => {
    const workspace = tempWorkspace();
    const all = validatingFuzzPlans(workspace);
    const plans = FULL ? all : all.filter((fuzz) => toolRuns(fuzz.plan) <= CI_MAX_RUNS);
    const left = all.filter((fuzz) => !plans.includes(fuzz));
    expect(plans.length).toBeGreaterThan(20);
    const outcomes: { file: string; status: string; why: string; failedTasks: string[]; closedByServer: number }[] = [];
    await withWorker(async (h) => {
      let next = 0;
      const lane = async () => {
        while (next < plans.length) {
          const fuzz = plans[next++];
          const id = await startPlan(h, fuzz.plan);
          const d = await runToEnd(h, id);
          const failedStep = d.steps.find((s) => s.status === 'failed');
          const tasks = await failedTasks(h, id);
          outcomes.push({ file: fuzz.file, status: d.status, why: d.reason ?? failedStep?.error ?? '', failedTasks: tasks.failed, closedByServer: tasks.closedByServer });
        }
      };
      await Promise.all(Array.from({ length: AT_ONCE }, lane));
    });
    const completed = outcomes.filter((o) => o.status === 'completed');
    const failed = outcomes.filter((o) => o.status === 'failed');
    process.stdout.write(
      `fuzz run: ${outcomes.length} valid plans run, ${completed.length} completed, ${failed.length} failed with a message, ` +
        `${outcomes.reduce((n, o) => n + o.failedTasks.length, 0)} failed workflow tasks ` +
        `(and ${outcomes.reduce((n, o) => n + o.closedByServer, 0)} closed by the server's housekeeping)` +
        `${left.length > 0 ? `; ${left.length} plans of over ${CI_MAX_RUNS} tool runs left for CADRE_FAULTS=full (${left.map((f) => f.file).join(', ')})` : ''}\n`,
    );
    for (const o of outcomes) {
      expect({ file: o.file, failedTasks: o.failedTasks }).toEqual({ file: o.file, failedTasks: [] });
      expect({ file: o.file, status: ['completed', 'failed'].includes(o.status) }).toEqual({ file: o.file, status: true });
      if (o.status === 'failed') expect({ file: o.file, why: o.why.length > 0 }).toEqual({ file: o.file, why: true });
    }
  }, 30 * 60_000);
});
