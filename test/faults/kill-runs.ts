/**
 * What the kill suites (worker kills, server kills) run and check. Activities run at least once:
 * one that was running when its worker or server died may run again. What must never happen is a
 * step or item whose completion is recorded running again: no execution may *start* after its
 * completion was recorded. Every tool here logs its start, so the test can tell the two apart.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { temporal } from '@temporalio/proto';
import type { CadreClient } from '../../src/client/client';
import type { CompiledPlan } from '../../src/plan-format/types';
import { hostOfIdentity } from '../../src/protocol/host-liveness';
import { compile } from '../support/harness';
import { runHistories } from '../support/history';

/** Logs "<label> <start ms>" for the run, then works for a while. */
const logged = (label: string, seconds: number) => `echo "${label} $(date +%s%3N)" >> runs.log; sleep ${seconds}`;

/**
 * Activities, a local activity (b), a forEach of activities, a durable sleep and a question: kills
 * land in every kind of work.
 */
export function killPlan(workspace: string): CompiledPlan {
  return compile(
    `
name: kills
# Kills come every few seconds and a killed attempt is retried only after the heartbeat timeout:
# one activity can lose several attempts in a row. The plan allows for it (cadre's default is 3).
defaults: { retry: { maximumAttempts: 50, maximumInterval: 2s } }
steps:
  - { id: a, tool: shell, with: { command: '${logged('a', 0.6)}' } }
  - { id: b, dependsOn: [a], local: true, tool: shell, with: { command: '${logged('b', 0.3)}' } }
  - { id: loop, dependsOn: [b], forEach: [0, 1, 2, 3, 4, 5], concurrency: 3, tool: shell, with: { command: '${logged('loop[{{ index }}]', 0.5)}' } }
  - { id: nap, dependsOn: [loop], tool: sleep, with: { duration: 1s } }
  - { id: go, dependsOn: [nap], ask: { question: "Go on?", choices: [yes] } }
  - { id: c, dependsOn: [go], tool: shell, with: { command: '${logged('c', 0.6)}' } }
`,
    workspace,
  );
}

/** When each labelled execution started, from the run's log. */
function executions(workspace: string): Map<string, number[]> {
  const starts = new Map<string, number[]>();
  for (const line of readFileSync(path.join(workspace, 'runs.log'), 'utf8').trim().split('\n')) {
    const [label, ms] = line.split(' ');
    starts.set(label, [...(starts.get(label) ?? []), Number(ms)]);
  }
  return starts;
}

/**
 * When each activity's completion was recorded (by its id, `#n` runs folded). The local step's (b)
 * is recorded by its marker, when the workflow task that ran it completes: the step's own `endedAt`
 * is earlier (the workflow's clock when the activity returned), and a kill between the two runs it
 * again, as at-least-once allows.
 */
async function completions(client: CadreClient, workflowId: string): Promise<Map<string, number>> {
  const done = new Map<string, number>();
  for (const events of (await runHistories(client.client, workflowId)).values()) {
    for (const [label, ends] of activityCompletions(events)) done.set(label, ends[ends.length - 1].at);
    for (const event of events) {
      const marker = event.markerRecordedEventAttributes;
      if (marker?.markerName === 'core_local_activity') {
        const data = JSON.parse(Buffer.from(marker.details?.data?.payloads?.[0]?.data ?? new Uint8Array()).toString()) as { activity_type?: string };
        // The plan's one local tool step; other local activities (analytics) run no tool.
        if (data.activity_type === 'runTool') done.set('b', eventAt(event));
      }
    }
  }
  return done;
}

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const eventAt = (event: HistoryEvent) => Number(event.eventTime?.seconds ?? 0) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;

/**
 * Each activity's recorded completions in one history, by activity id (`#n` runs folded), in order:
 * when, and the host whose worker started it (a worker's identity is `<pid>@<host>`).
 */
export function activityCompletions(events: HistoryEvent[]): Map<string, { host: string; at: number }[]> {
  const scheduled = new Map<string, string>();
  const startedBy = new Map<string, string>();
  const done = new Map<string, { host: string; at: number }[]>();
  for (const event of events) {
    const id = event.activityTaskScheduledEventAttributes?.activityId;
    if (id) scheduled.set(String(event.eventId), id.replace(/#\d+$/, ''));
    const started = event.activityTaskStartedEventAttributes;
    if (started) startedBy.set(String(started.scheduledEventId), hostOfIdentity(started.identity) ?? '?');
    const completed = event.activityTaskCompletedEventAttributes;
    if (completed) {
      const label = scheduled.get(String(completed.scheduledEventId)) as string;
      done.set(label, [...(done.get(label) ?? []), { host: startedBy.get(String(completed.scheduledEventId)) ?? '?', at: eventAt(event) }]);
    }
  }
  return done;
}

interface RerunReport {
  /** Executions that started after their step's completion was recorded: must be none. */
  completedRerun: string[];
  /** Extra executions that started before the completion: in flight at a kill, legitimately run again. */
  inFlightRanAgain: number;
}

async function rerunReport(client: CadreClient, workflowId: string, workspace: string): Promise<RerunReport> {
  const done = await completions(client, workflowId);
  const report: RerunReport = { completedRerun: [], inFlightRanAgain: 0 };
  for (const [label, starts] of executions(workspace)) {
    const completedAt = done.get(label);
    if (completedAt === undefined) throw new Error(`${workflowId}: no recorded completion for ${label}`);
    for (const start of starts) if (start > completedAt) report.completedRerun.push(`${workflowId} ${label} started ${start - completedAt} ms after it completed`);
    report.inFlightRanAgain += starts.filter((start) => start <= completedAt).length - 1;
  }
  return report;
}

export interface KilledRun {
  id: string;
  workspace: string;
}

export interface KillOutcome {
  statuses: string[];
  /** Executions that started after their completion was recorded, over all runs: must be none. */
  completedRerun: string[];
  summary: string;
}

/** Waits for every run to end, then reads from their logs and histories what ran again. */
export async function killOutcome(client: CadreClient, runs: KilledRun[]): Promise<KillOutcome> {
  const finals = await Promise.all(runs.map((r) => client.result(r.id)));
  // A run that did not complete is the failure to report, with its reason (its log may lack completions).
  const notCompleted = finals.flatMap((d, i) => (d.status === 'completed' ? [] : [`${runs[i].id}: ${d.status}${d.reason ? ` (${d.reason})` : ''}`]));
  if (notCompleted.length > 0) throw new Error(`runs did not complete: ${notCompleted.join('; ')}`);
  const reports = await Promise.all(runs.map((r) => rerunReport(client, r.id, r.workspace)));
  const completedRerun = reports.flatMap((r) => r.completedRerun);
  const ranAgain = reports.reduce((n, r) => n + r.inFlightRanAgain, 0);
  const completed = finals.filter((d) => d.status === 'completed').length;
  return {
    statuses: finals.map((d) => d.status),
    completedRerun,
    summary: `runs completed ${completed}/${runs.length}, completed steps re-run ${completedRerun.length}, in flight at a kill and ran again ${ranAgain}`,
  };
}

/**
 * Answers every question of `runs` (read again on each round: runs started later are answered too)
 * with its first choice until stopped. Its queries fail while no worker or no server is up; it asks again.
 */
export function answerQuestions(client: CadreClient, runs: readonly KilledRun[]): { stop(): Promise<void> } {
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const { id } of [...runs]) {
        if (!running) break;
        try {
          const d = await client.diagnostics(id);
          for (const w of d.waiting) await client.answer(id, w.id, w.choices?.[0] ?? 'yes');
        } catch {
          // no worker or server right now, or the run moved on meanwhile
        }
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
    },
  };
}
