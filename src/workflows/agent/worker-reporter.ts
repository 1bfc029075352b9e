/**
 * A worker's state, told to everyone who needs it: the machine checks each move, the
 * `CadreWorkerState` search attribute shows it to `temporal workflow list --query`, and the team
 * run (the parent workflow) gets a `workerState` signal with the move's sequence number.
 */
import { ApplicationFailure, CancellationScope, getExternalWorkflowHandle, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { isoAt, nowMs } from '../common/clock';
import { SentSignals } from '../common/sent-signals';
import { CadreWorkerState, workerStateSignal } from '../../protocol/definitions';
import { type WorkerState, WorkerStateMachine, type WorkerTransition } from '../../protocol/worker-state';

export class WorkerReporter {
  readonly machine = new WorkerStateMachine();
  private readonly sending = new SentSignals();
  /**
   * Where the signals go, and the one scope they are sent in, made at the first move: a scope and a
   * handle for each move cost a dozen promises, each of which the SDK makes costly (it records its
   * stack), and a team of workers moves often (bench/team-signals).
   */
  private target?: { handle: ReturnType<typeof getExternalWorkflowHandle>; scope: CancellationScope; who: { workflowId: string; step?: string; role?: string } } | null;

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
  flush(): Promise<void> {
    return this.sending.flush();
  }

  private report(transition: WorkerTransition): void {
    upsertSearchAttributes([{ key: CadreWorkerState, value: transition.to }]);
    const target = (this.target ??= this.teamRun());
    if (!target) return;
    // Sent even while the worker is being cancelled (the scope cannot be), so the team sees it go; a team run that ended cannot be told.
    this.sending.track(target.scope.run(() => target.handle.signal(workerStateSignal, { ...target.who, ...transition })));
  }

  private teamRun(): NonNullable<WorkerReporter['target']> | null {
    const parent = workflowInfo().parent;
    const handle = this.team ? getExternalWorkflowHandle(this.team.runId) : parent && getExternalWorkflowHandle(parent.workflowId, parent.runId);
    if (!handle) return null;
    const who = { workflowId: workflowInfo().workflowId, ...(this.team && { step: this.team.step, ...(this.team.role && { role: this.team.role }) }) };
    return { handle, scope: new CancellationScope({ cancellable: false }), who };
  }
}
