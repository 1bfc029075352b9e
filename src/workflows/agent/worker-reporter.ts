/**
 * A worker's state, told to everyone who needs it: the machine checks each move, the
 * `CadreWorkerState` search attribute shows it to `temporal workflow list --query`, and the team
 * run (the parent workflow) gets a `workerState` signal with the move's sequence number.
 */
import { ApplicationFailure, CancellationScope, getExternalWorkflowHandle, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { isoAt, nowMs } from '../common/clock';
import { CadreWorkerState, workerStateSignal } from '../../protocol/definitions';
import { type WorkerState, WorkerStateMachine, type WorkerTransition } from '../../protocol/worker-state';

export class WorkerReporter {
  readonly machine = new WorkerStateMachine();
  private readonly sending = new Set<Promise<void>>();

  /**
   * @param reports false while replaying runs recorded before workers reported their state.
   * @param team the team run to tell (default: the parent workflow), and who this worker is there.
   */
  constructor(
    private readonly reports: boolean,
    private readonly moved: (transition: WorkerTransition) => void,
    private readonly team?: { runId: string; step: string; role?: string },
  ) {}

  get state(): WorkerState {
    return this.machine.state;
  }

  /** A move cadre's own code makes: a refused one is a bug, and fails the worker instead of its workflow task. */
  move(to: WorkerState, reason: string): WorkerTransition {
    const moved = this.tryMove(to, reason);
    if (typeof moved === 'string') throw ApplicationFailure.nonRetryable(moved, 'WorkerStateInvalid');
    return moved;
  }

  /** A move a model asked for: a refused one is said back to it. */
  tryMove(to: WorkerState, reason: string): WorkerTransition | string {
    const moved = this.machine.move(to, reason, isoAt(nowMs()));
    if (typeof moved === 'string') return moved;
    if (this.reports) this.report(moved);
    this.moved(moved);
    return moved;
  }

  /** Waits until every state signal sent so far has been delivered (or found its parent gone). */
  async flush(): Promise<void> {
    while (this.sending.size > 0) await Promise.all([...this.sending]);
  }

  private report(transition: WorkerTransition): void {
    upsertSearchAttributes([{ key: CadreWorkerState, value: transition.to }]);
    const parent = workflowInfo().parent;
    const target = this.team ? getExternalWorkflowHandle(this.team.runId) : parent && getExternalWorkflowHandle(parent.workflowId, parent.runId);
    if (!target) return;
    const who = this.team ? { step: this.team.step, ...(this.team.role && { role: this.team.role }) } : {};
    // Sent even while the worker is being cancelled, so the team sees it go; a team run that ended cannot be told.
    const sent = CancellationScope.nonCancellable(() => target.signal(workerStateSignal, { workflowId: workflowInfo().workflowId, ...who, ...transition }))
      .catch(() => undefined)
      .finally(() => this.sending.delete(sent));
    this.sending.add(sent);
  }
}
