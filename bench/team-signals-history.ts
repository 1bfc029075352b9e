/**
 * bench/team-signals: each move's way to the team run, read from the histories of the team run and
 * its workers (server-stamped times): the worker's task that made the move, the signal that carried
 * it sent when a task of the worker completed (workers send their moves in batches, `workerMoves`;
 * runs recorded before sent a `workerState` signal a move), recorded in the team run, the team run's
 * task that applied it (its start is the board's `seenAt`) and that task's completion, after which a
 * query of the board shows the move.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { tsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import type { WorkerMovesSignal, WorkerStateSignal } from '../src/protocol/definitions';

const EventType = temporal.api.enums.v1.EventType;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

export interface SignalTiming {
  signal: WorkerStateSignal;
  /** The worker's workflow task that made the move started (`at`, its workflow time). */
  atMs: number;
  /** That task completed: the move is recorded and the signal sent. */
  sentMs: number;
  /** The team run's history has the signal. */
  signalledMs: number;
  /** The team run's first workflow task after it started: its code applied the move. */
  startedMs: number;
  /** The team run's task that applied it completed: from now a query shows it. */
  completedMs: number;
}

export interface TeamTask {
  signals: number;
  ms: number;
}

export const signalKey = (s: WorkerStateSignal) => `${s.workflowId}#${s.seq}`;

/**
 * Walks the team run's history. Signals that arrive while a workflow task runs are written after it
 * completes, so the next WorkflowTaskStarted is the task whose activation carries them; a task that
 * fails or times out hands them to the next one, which applies them again.
 */
export function signalTimings(teamEvents: HistoryEvent[], workerEvents: HistoryEvent[]) {
  // When each worker's workflow task that sent a signal completed (its SignalExternal...Initiated event).
  const sentMs = new Map<string, number>();
  for (const event of workerEvents) {
    const attrs = event.signalExternalWorkflowExecutionInitiatedEventAttributes;
    if (attrs?.signalName === 'workerState' || attrs?.signalName === 'workerMoves') {
      for (const move of movesOf(attrs.signalName, attrs.input!.payloads![0])) sentMs.set(signalKey(move), tsToMs(event.eventTime));
    }
  }
  type Pending = Omit<SignalTiming, 'startedMs' | 'completedMs'> & { startedMs?: number };
  let pending: Pending[] = [];
  let inTask: Pending[] = [];
  let taskStartedMs = 0;
  const timings: SignalTiming[] = [];
  const tasks: TeamTask[] = [];
  const highestSeq = new Map<string, number>();
  const seen = new Map<string, WorkerStateSignal>();
  const early: WorkerStateSignal[] = [];
  let outOfOrder = 0;
  /** Every signal the team run took, by name: state signals share its tasks with the others (its stream's publish). */
  const signalsByName: Record<string, number> = {};
  for (const event of teamEvents) {
    const attrs = event.workflowExecutionSignaledEventAttributes;
    const type = event.eventType;
    if (attrs?.signalName) signalsByName[attrs.signalName] = (signalsByName[attrs.signalName] ?? 0) + 1;
    if (type === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED && (attrs?.signalName === 'workerState' || attrs?.signalName === 'workerMoves')) {
      for (const signal of movesOf(attrs.signalName, attrs.input!.payloads![0])) {
        // History order is the order the handler gets them: each worker's seq must go up by exactly 1
        // (a swapped pair counts twice, the one after it not at all: we compare with the highest seen).
        const next = (highestSeq.get(signal.workflowId) ?? 0) + 1;
        if (signal.seq !== next) outOfOrder++;
        if (signal.seq > next) early.push(signal);
        highestSeq.set(signal.workflowId, Math.max(next - 1, signal.seq));
        seen.set(signalKey(signal), signal);
        pending.push({ signal, atMs: Date.parse(signal.at), sentMs: sentMs.get(signalKey(signal)) ?? NaN, signalledMs: tsToMs(event.eventTime) });
      }
    } else if (type === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED) {
      taskStartedMs = tsToMs(event.eventTime);
      for (const p of pending) p.startedMs ??= taskStartedMs;
      inTask = [...inTask, ...pending];
      pending = [];
    } else if (type === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) {
      const completedMs = tsToMs(event.eventTime);
      tasks.push({ signals: inTask.length, ms: completedMs - taskStartedMs });
      for (const p of inTask) timings.push({ ...p, startedMs: p.startedMs as number, completedMs });
      inTask = [];
    } else if (type === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED || type === EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT) {
      pending = [...inTask, ...pending];
      inTask = [];
    }
  }
  const unapplied = pending.length + inTask.length;
  return { timings, tasks, seen, early, outOfOrder, unapplied, signalsByName };
}

/** The moves a state signal carries: one (`workerState`), or a batch (`workerMoves`), each with who made it. */
function movesOf(name: string, payload: temporal.api.common.v1.IPayload): WorkerStateSignal[] {
  if (name === 'workerState') return [defaultPayloadConverter.fromPayload<WorkerStateSignal>(payload)];
  const { moves, ...who } = defaultPayloadConverter.fromPayload<WorkerMovesSignal>(payload);
  return moves.map((move) => ({ ...who, ...move }));
}
