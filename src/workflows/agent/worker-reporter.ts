/**
 * A worker's state, told to everyone who needs it: the machine checks each move, the
 * `CadreWorkerState` search attribute shows it to `temporal workflow list --query`, and the team
 * run (the parent workflow) gets the moves with their sequence numbers.
 *
 * The moves go in batches (patch worker-reports; earlier runs sent a `workerState` signal and an
 * upsert a move): the moves of one workflow task in one `workerMoves` signal and one upsert, one
 * signal in flight at a time, and after the first two, signals further apart the more the worker
 * has sent, up to fifteen minutes. However long a worker runs and however often it moves, its team run
 * takes a bounded number of its signals (the team run's signals are for what controls it:
 * docs/streaming.md); the final move goes at once, so the board is exact at the end, and clients
 * read a running worker's state from its own query.
 */
import { ApplicationFailure, CancellationScope, getExternalWorkflowHandle, sleep, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { isoAt, nowMs } from '../common/clock';
import { SentSignals } from '../common/sent-signals';
import { CadreWorkerState, workerMovesSignal, workerStateSignal } from '../../protocol/definitions';
import { type WorkerState, WorkerStateMachine, type WorkerTransition, reportSpacing } from '../../protocol/worker-state';
import { PATCH_REPORT_GATES } from '../../protocol/patches';
import type { Patches } from '../patch-baselines';


/** Moves held for one signal at most: past this, they go whatever the spacing. */
const MAX_MOVES_A_SIGNAL = 500;
const FINAL: ReadonlySet<WorkerState> = new Set(['completed', 'error', 'cancelled']);

interface TeamTarget {
  handle: ReturnType<typeof getExternalWorkflowHandle>;
  scope: CancellationScope;
  who: { workflowId: string; step?: string; role?: string };
}

export class WorkerReporter {
  readonly machine = new WorkerStateMachine();
  private readonly sending: SentSignals;
  /**
   * Where the signals go, and the one scope they are sent in, made at the first move: a scope and a
   * handle for each move cost a dozen promises, each of which the SDK makes costly (it records its
   * stack), and a team of workers moves often (bench/team-signals).
   */
  private target?: TeamTarget | null;
  /** Batched reports: moves not yet sent, signals sent, and what is under way. */
  private readonly outbox: WorkerTransition[] = [];
  private reports = 0;
  private lastReportAt = 0;
  private inFlight = false;
  private pumpQueued = false;
  private timerSet = false;
  private urgent = false;
  /** Spacing by a timer from each report (PATCH_REPORT_GATES): asked once spacing starts; open while no spacing runs. */
  private gates?: boolean;
  private gateOpen = true;
  private shownState?: WorkerState;

  /**
   * @param patches its agent's patches (report gates: asked at the first spaced report).
   * @param reports false while replaying runs recorded before workers reported their state.
   * @param team the team run to tell (default: the parent workflow), and who this worker is there.
   * @param batched moves go in batches (patch worker-reports); false while replaying runs recorded before.
   * @param refused a move signal the team run refused (it took as many signals as a run may).
   */
  constructor(
    private readonly patches: Patches,
    private readonly reporting: boolean,
    private readonly moved: (transition: WorkerTransition) => void,
    private readonly team?: { runId: string; step: string; role?: string },
    private readonly batched = false,
    refused?: (err: ApplicationFailure) => void,
  ) {
    this.sending = new SentSignals(refused);
  }

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
    if (this.reporting) this.report(moved);
    this.moved(moved);
    return moved;
  }

  /** Sends what is left at once and waits until every state signal sent so far has been delivered (or found its parent gone). */
  async flush(): Promise<void> {
    this.urgent = true;
    this.pump();
    while (this.sending.size > 0 || (this.outbox.length > 0 && this.teamTarget())) {
      await this.sending.flush();
      this.urgent = true;
      this.pump();
    }
  }

  private report(transition: WorkerTransition): void {
    if (!this.batched) {
      upsertSearchAttributes([{ key: CadreWorkerState, value: transition.to }]);
      const target = this.teamTarget();
      // Sent even while the worker is being cancelled (the scope cannot be), so the team sees it go; a team run that ended cannot be told.
      if (target) this.sending.track(target.scope.run(() => target.handle.signal(workerStateSignal, { ...target.who, ...transition })));
      return;
    }
    this.outbox.push(transition);
    if (FINAL.has(transition.to)) this.urgent = true;
    if (this.pumpQueued) return;
    // Once this activation's code has run: its moves go together.
    this.pumpQueued = true;
    void Promise.resolve().then(() => {
      this.pumpQueued = false;
      this.pump();
    });
  }

  /** Shows the state, and sends the moves waiting when the spacing allows (else later, by a timer). */
  private pump(): void {
    if (this.shownState !== this.machine.state && this.batched) {
      this.shownState = this.machine.state;
      upsertSearchAttributes([{ key: CadreWorkerState, value: this.machine.state }]);
    }
    if (this.outbox.length === 0 || this.inFlight) return;
    const target = this.teamTarget();
    if (!target) {
      this.outbox.length = 0;
      return;
    }
    if (!this.urgent && this.outbox.length < MAX_MOVES_A_SIGNAL) {
      if (this.gates) {
        if (!this.gateOpen) return;
      } else {
        const wait = this.lastReportAt + reportSpacing(this.reports) - nowMs();
        if (wait > 0) {
          this.later(target, wait);
          return;
        }
      }
    }
    const moves = this.outbox.splice(0);
    this.urgent = false;
    this.reports++;
    this.lastReportAt = nowMs();
    const spacing = reportSpacing(this.reports);
    if (spacing > 0 && (this.gates ??= this.patches.has(PATCH_REPORT_GATES))) this.closeGate(target, spacing);
    this.inFlight = true;
    const sent = target.scope.run(() => target.handle.signal(workerMovesSignal, { ...target.who, moves }));
    this.sending.track(sent);
    const next = () => {
      this.inFlight = false;
      this.pump();
    };
    sent.then(next, next);
  }

  /** The next report waits `ms` from this one: a timer, whatever the clock says when it comes. */
  private closeGate(target: TeamTarget, ms: number): void {
    this.gateOpen = false;
    this.pumpAfter(target, ms, () => (this.gateOpen = true));
  }

  private later(target: TeamTarget, ms: number): void {
    if (this.timerSet) return;
    this.timerSet = true;
    this.pumpAfter(target, ms, () => (this.timerSet = false));
  }

  /** A timer in the target's scope (not cancellable), then `fired` and the pump. */
  private pumpAfter(target: TeamTarget, ms: number, fired: () => void): void {
    void target.scope
      .run(() => sleep(ms))
      .then(() => {
        fired();
        this.pump();
      });
  }

  private teamTarget(): TeamTarget | null {
    return (this.target ??= this.teamRun());
  }

  private teamRun(): TeamTarget | null {
    const parent = workflowInfo().parent;
    const handle = this.team ? getExternalWorkflowHandle(this.team.runId) : parent && getExternalWorkflowHandle(parent.workflowId, parent.runId);
    if (!handle) return null;
    const who = { workflowId: workflowInfo().workflowId, ...(this.team && { step: this.team.step, ...(this.team.role && { role: this.team.role }) }) };
    return { handle, scope: new CancellationScope({ cancellable: false }), who };
  }
}
