/**
 * The host a run's workspace is bound to (docs/operations.md, A fleet): asked once as the run
 * starts, of the shared queue, whichever host takes it (an activity: a local one met an unexplained
 * replay mismatch under load). Its tool, worktree, compensation and agent activities then go to
 * that host's queue (common/host-route.ts), until `cadre move` moves them. Workflow code.
 */
import { ActivityFailure, ApplicationFailure, CancellationScope, isCancellation, proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { CadreHost, type HostMove, type WorkspaceCloneRecord } from '../../protocol/definitions';
import { hostTaskQueue } from '../../protocol/task-queue';
import type { Activities, ClonedWorkspace, WorkspaceHost } from '../../activities';
import type { WorkspaceSource } from '../../plan-format/types';
import { describeFailure } from '../common/failures';
import { HostRoute, hostActivities } from '../common/host-route';
import { HOST_NAME } from '../../protocol/host-liveness';
import { isoAt, nowMs } from '../common/clock';

/** Any host may take it: one that does not hold the workspace fails WorkspaceNotHere, retried until one that does takes it. */
const anyHost = proxyActivities<Activities>({
  // Named, as the steps' activities are, for the Web UI and `describe`.
  activityId: 'workspace-host',
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '2m',
  retry: { initialInterval: '200ms', backoffCoefficient: 1.5, maximumInterval: '2s', nonRetryableErrorTypes: ['WorkspaceMissing'] },
  summary: 'which host holds the workspace',
});

/** A clone of the run's workspace, on whichever host takes it (not one given up on). */
const CLONE_OPTIONS = { startToCloseTimeout: '10m', heartbeatTimeout: '30s', summary: 'clone the workspace' } as const;
// Until a host can: one that was given up on refuses it, a remote that fails now may not later.
const cloneAnywhere = proxyActivities<Activities>({ ...CLONE_OPTIONS, retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', nonRetryableErrorTypes: ['BadToolInput'] } });

/** The host a person moves a clone's run to clones it within 10 s of asking, or is refused. */
function cloneOn(taskQueue: string) {
  return proxyActivities<Activities>({ ...CLONE_OPTIONS, taskQueue, scheduleToStartTimeout: '10s', retry: { maximumAttempts: 1 } });
}

/** Each step's work, pushed before the step counts as done. */
const PUSH_OPTIONS = {
  startToCloseTimeout: '5m',
  heartbeatTimeout: '30s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumInterval: '30s', maximumAttempts: 10 },
  summary: "push the step's work",
} as const;

/** The worktree of the clone a step worked in: pushed with the step's work, to a branch of the run's. */
export interface CloneWorktree {
  path: string;
  branch: string;
  task: string;
}

/** Thrown into a step whose work was given up on with its host: the step runs again where the run moved. */
export class WorkspaceMoved extends Error {
  constructor(why: string) {
    super(`${why} before the step's work was pushed`);
    this.name = 'WorkspaceMoved';
  }
}

/** The host a person moves the run to: it must hold the workspace, and take the question within 10 s (a host that is up polls all the time). */
function askHost(taskQueue: string) {
  return proxyActivities<Activities>({ taskQueue, scheduleToStartTimeout: '10s', startToCloseTimeout: '30s', retry: { maximumAttempts: 1 }, summary: 'does the host hold the workspace' });
}

export class WorkspaceHostBinding {
  private bound?: WorkspaceHost;
  private routed?: HostRoute;

  /** A workspace cloned from a repository (workspace-clone.ts): its source, and where its work is. */
  private source?: WorkspaceSource;
  private cloned?: WorkspaceCloneRecord;
  /** The steps' work while the workspace is a clone: given up on (and why), and run again, when the run moves. */
  private readonly restartable = new Set<CancellationScope>();
  private readonly restarted = new Map<CancellationScope, string>();
  private moving?: Promise<unknown>;
  private pushing: Promise<unknown> = Promise.resolve();
  /** The run's scope (the binding is made with the run). */
  private readonly home = CancellationScope.current();

  /**
   * @param changed told when the host goes away, comes back, or the run moves.
   * @param movedTo told of a clone's new folder, on the host the run moved to.
   */
  constructor(
    private readonly changed: () => void = () => undefined,
    private readonly movedTo: (workspace: string) => void = () => undefined,
  ) {}

  /** The clone, for diagnostics and a continued run. */
  get clone(): WorkspaceCloneRecord | undefined {
    return this.cloned && { ...this.cloned };
  }

  /** What a continued run carries of the binding: the host, the moves, and the clone when the workspace is one. */
  carried(cloned: boolean): { host?: WorkspaceHost; clone?: WorkspaceCloneRecord; hostMoves?: HostMove[] } {
    return { ...(this.bound && { host: this.bound }), ...(cloned && this.cloned && { clone: this.clone }), ...(this.moves.length > 0 && { hostMoves: [...this.moves] }) };
  }

  /** The host, for diagnostics and a continued run. */
  get host(): WorkspaceHost | undefined {
    return this.bound;
  }

  /** Where the workspace's activities go; undefined while the run is bound to no host. */
  get route(): HostRoute | undefined {
    return this.routed;
  }

  restore(host: WorkspaceHost | undefined, clone?: { source: WorkspaceSource; record: WorkspaceCloneRecord }): void {
    this.bound = host;
    this.routed = host && new HostRoute(host, () => this.routeChanged());
    if (clone) [this.source, this.cloned] = [clone.source, { ...clone.record }];
  }

  /** The moves, in order: a person's (`cadre move`), and the run's own when a clone's host is lost. */
  readonly moves: HostMove[] = [];

  /** A clone's host that stops answering is given up on at once: another host clones the run's branch. */
  private routeChanged(): void {
    // In the run's own scope: the step that noticed is among those given up on.
    if (this.source && this.routed?.waiting() && !this.moving) this.home.run(() => this.relocating(cloneAnywhere, 'lost')).catch(() => undefined);
    this.changed();
  }

  /** One move of a clone at a time; the steps given up on wait for it (moved()). */
  private relocating(on: Pick<Activities, 'cloneWorkspace'>, reason?: 'lost'): Promise<{ from: string; to: string }> {
    const moving = this.relocate(on, reason).finally(() => (this.moving = undefined));
    this.moving = moving;
    return moving;
  }

  /** Refuses a move before it reaches history: not bound, a host name that cannot be, or where the run is. */
  checkMove(to: unknown): void {
    const from = this.bound?.host;
    if (from === undefined) throw moveRejected('the run is bound to no host: its activities go to any worker');
    if (typeof to !== 'string' || !HOST_NAME.test(to)) throw moveRejected(`${JSON.stringify(to)} is not a host name`);
    if (to === from) throw moveRejected(`the run is on host ${to} already`);
  }

  /**
   * `cadre move`: gives up on the bound host for `host`, which must hold the workspace. What waited
   * for the old host is scheduled again on the new one.
   */
  async moveTo(host: string, workspace: string): Promise<{ from: string; to: string }> {
    this.checkMove(host);
    const from = this.bound?.host ?? '';
    const queue = hostTaskQueue(host, workflowInfo().taskQueue);
    let found: WorkspaceHost | null;
    try {
      if (this.source && this.moving) throw moveRejected('the run is moving to another host already');
      if (this.source) return await this.relocating(cloneOn(queue));
      found = await askHost(queue).locateWorkspace({ workspace });
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      throw moveRejected(`host ${host} cannot take the run: ${describeFailure(err).message.replace(/^\w+: /, '')}`);
    }
    if (!found) throw moveRejected(`the worker that answered for host ${host} has no host`);
    // Checked again: another move may have ended while this one asked.
    if (this.bound?.host !== from) throw moveRejected(`the run moved to host ${this.bound?.host} meanwhile`);
    this.bound = found;
    this.routed?.move(found.taskQueue, found.solo);
    this.moves.push({ from, to: found.host, at: isoAt(nowMs()) });
    if (found.indexed) upsertSearchAttributes([{ key: CadreHost, value: found.host }]);
    return { from, to: found.host };
  }

  /**
   * Clones the run's branch on another host (any, or the one `cadre move` names), gives up on the
   * steps whose work the old host held, and sends what comes next there. Returns the move.
   */
  private async relocate(on: Pick<Activities, 'cloneWorkspace'>, reason?: 'lost'): Promise<{ from: string; to: string }> {
    const from = this.bound?.host ?? '';
    const why = reason === 'lost' ? `host ${from} was lost` : `host ${from} was given up on (cadre move)`;
    this.restartAll(why);
    const cloned = await on.cloneWorkspace({ ...(this.source as WorkspaceSource), run: workflowInfo().workflowId, notOn: from });
    if (this.bound?.host !== from) throw moveRejected(`the run moved to host ${this.bound?.host} meanwhile`);
    const to = cloned.host as WorkspaceHost;
    this.took(cloned);
    this.bound = to;
    // Steps begun while it cloned ran with the old folder: they go again too.
    this.restartAll(why);
    this.routed?.move(to.taskQueue, to.solo);
    this.moves.push({ from, to: to.host, at: isoAt(nowMs()), ...(reason && { reason }) });
    if (to.indexed) upsertSearchAttributes([{ key: CadreHost, value: to.host }]);
    this.changed();
    return { from, to: to.host };
  }

  private took(cloned: ClonedWorkspace): void {
    this.cloned = { repo: (this.source as WorkspaceSource).repo, branch: cloned.branch, path: cloned.path, commit: cloned.commit };
    this.movedTo(cloned.path);
  }

  private restartAll(why: string): void {
    for (const scope of this.restartable) {
      if (!this.restarted.has(scope)) this.restarted.set(scope, why);
      scope.cancel();
    }
  }

  /**
   * A step's work in a cloned workspace (and in its worktree, when it has one): pushed to the run's
   * branches before it counts as done, and given up on (WorkspaceMoved) when the run moves before
   * then, to run again on the new host.
   */
  async work<T>(step: string, work: () => Promise<T>, worktree: () => CloneWorktree | undefined = () => undefined): Promise<T> {
    const scope = new CancellationScope();
    this.restartable.add(scope);
    try {
      return await scope.run(async () => {
        const output = await work();
        await this.push(step, worktree());
        return output;
      });
    } catch (err) {
      const why = this.restarted.get(scope);
      if (why !== undefined && isCancellation(err) && !CancellationScope.current().consideredCancelled) throw new WorkspaceMoved(why);
      throw err;
    } finally {
      this.restartable.delete(scope);
      this.restarted.delete(scope);
    }
  }

  /** Until the run has moved, when it is moving: a step given up on runs again after. */
  async moved(): Promise<void> {
    while (this.moving) await this.moving.catch(() => undefined);
  }

  /** One push at a time: two at once would race for the index, and the older commit could be pushed last. */
  private push(step: string, worktree: CloneWorktree | undefined): Promise<void> {
    const clone = this.cloned as WorkspaceCloneRecord;
    const request = { workspace: clone.path, run: workflowInfo().workflowId, step, ...(worktree && { worktree }) };
    const mine = this.pushing.then(() => hostActivities(PUSH_OPTIONS, this.routed).checkpointWorkspace(request));
    this.pushing = mine.catch(() => undefined);
    return mine.then(({ commit }) => {
      if (this.cloned === clone) clone.commit = commit;
    });
  }

  /** A completed run's clone goes: its work is on the run's branch. One that cannot go stays, and the record says why. */
  async removeClone(): Promise<void> {
    const clone = this.cloned;
    if (!clone) return;
    try {
      await hostActivities({ ...PUSH_OPTIONS, summary: 'remove the clone' }, this.routed).removeClone({ workspace: clone.path });
      clone.removed = true;
    } catch (err) {
      if (isCancellation(err)) throw err;
      clone.kept = describeFailure(err).message;
    }
    this.changed();
  }

  /** Clones `source` on whichever host takes it (any worker's, with no fleet), and binds the run there (its folder goes to movedTo). */
  async bindClone(source: WorkspaceSource): Promise<void> {
    this.source = source;
    let cloned: ClonedWorkspace;
    try {
      cloned = await cloneAnywhere.cloneWorkspace({ ...source, run: workflowInfo().workflowId });
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      throw missing(source.repo, `it could not be cloned: ${describeFailure(err).message}`);
    }
    this.restore(cloned.host ?? undefined);
    this.took(cloned);
    if (this.bound?.indexed) upsertSearchAttributes([{ key: CadreHost, value: this.bound.host }]);
  }

  /**
   * Binds the workspace to the host that holds it, or leaves the run unbound when its worker has no
   * host (no fleet). No host holding it fails the run's start with WorkspaceMissing.
   */
  async bind(workspace: string): Promise<void> {
    try {
      this.restore((await anyHost.locateWorkspace({ workspace })) ?? undefined);
      if (this.bound?.indexed) upsertSearchAttributes([{ key: CadreHost, value: this.bound.host }]);
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      // The host's own words, without the failure's type before them.
      const message = describeFailure(err).message.replace(/^WorkspaceMissing: |^WorkspaceNotHere: /, '');
      throw missing(workspace, message.includes('the only host polling') ? message : `no host that took the question in 2 minutes holds it; the last: ${message}`);
    }
  }

  /** Local activities run on whichever worker runs the run: only a host polling alone is sure to be it. */
  allowsLocal(): boolean {
    return this.routed?.solo ?? true;
  }
}

function moveRejected(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, 'MoveRejected');
}

function missing(workspace: string, why: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`workspace ${workspace} is on no host of the fleet: ${why}`, 'WorkspaceMissing');
}
