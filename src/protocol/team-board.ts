/**
 * The team run's view of its workers: each worker signals every state change with a sequence
 * number, and the board applies them in that order, each once. A signal that arrives early waits
 * for the ones before it; a repeated one is counted and dropped. No polling: the board changes
 * only when a signal comes.
 */
import type { WorkerRecord, WorkerStateSignal } from './definitions';
import { extendFingerprint, fingerprintText, newFingerprint } from './worker-state';

/**
 * Early signals held per worker. Signals sent in one workflow task of a worker (completing, then
 * completed) may arrive in either order; signals of later tasks arrive after them. So a handful
 * at most are ever early; a flood beyond this is dropped rather than grow the run without bound.
 */
const MAX_EARLY = 1000;

interface Board {
  record: WorkerRecord;
  trail: number;
  early: Map<number, WorkerStateSignal>;
}

export class TeamBoard {
  private readonly workers = new Map<string, Board>();

  constructor(private readonly onChange: (record: WorkerRecord) => void) {}

  /** A worker the run started: shown as `initializing` until its first signal. */
  add(workflowId: string, step: string, details: { role?: string; worktree?: string }): void {
    if (this.workers.has(workflowId)) return;
    const record: WorkerRecord = { workflowId, step, ...details, state: 'initializing', seq: 0, duplicates: 0, early: 0, fingerprint: fingerprintText(newFingerprint()) };
    this.workers.set(workflowId, { record, trail: newFingerprint(), early: new Map() });
  }

  /** The signal handler: applies the signal and any early ones it unblocks; returns false for an unknown worker. */
  apply(signal: WorkerStateSignal, receivedAt: string): boolean {
    if (!this.workers.has(signal.workflowId) && signal.step !== undefined) this.add(signal.workflowId, signal.step, signal.role ? { role: signal.role } : {});
    const board = this.workers.get(signal.workflowId);
    if (!board) return false;
    const { record } = board;
    if (signal.seq <= record.seq || board.early.has(signal.seq)) {
      record.duplicates++;
      return true;
    }
    if (signal.seq > record.seq + 1) {
      if (board.early.size < MAX_EARLY) board.early.set(signal.seq, signal);
      record.early++;
      return true;
    }
    this.take(board, signal, receivedAt);
    for (let next = board.early.get(record.seq + 1); next; next = board.early.get(record.seq + 1)) {
      board.early.delete(next.seq);
      this.take(board, next, receivedAt);
    }
    this.onChange(record);
    return true;
  }

  /** Workers as a run before this one left them (continue-as-new): none runs then, so none moves again. */
  restore(records: WorkerRecord[]): void {
    for (const record of records) this.workers.set(record.workflowId, { record: { ...record }, trail: Number.parseInt(record.fingerprint, 16) >>> 0, early: new Map() });
  }

  /** Each worker as the run last applied its moves (clients add its running tools from its own query). */
  records(): WorkerRecord[] {
    return [...this.workers.values()].map(({ record }) => ({ ...record }));
  }

  private take(board: Board, signal: WorkerStateSignal, receivedAt: string): void {
    board.trail = extendFingerprint(board.trail, signal);
    Object.assign(board.record, {
      state: signal.to,
      seq: signal.seq,
      since: signal.at,
      seenAt: receivedAt,
      reason: signal.reason,
      fingerprint: fingerprintText(board.trail),
    });
  }
}
