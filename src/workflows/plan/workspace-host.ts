/**
 * The host a run's workspace is bound to (docs/operations.md, A fleet): asked once as the run
 * starts, of the shared queue, whichever host takes it (an activity: a local one met an unexplained
 * replay mismatch under load). Its tool, worktree, compensation and agent activities then go to
 * that host's queue (common/host-route.ts), until `cadre move` moves them. Workflow code.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { CadreHost } from '../../protocol/definitions';
import { hostTaskQueue } from '../../protocol/task-queue';
import type { Activities, WorkspaceHost } from '../../activities';
import { describeFailure } from '../common/failures';
import { HostRoute } from '../common/host-route';
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

/** The host a person moves the run to: it must hold the workspace, and take the question within 10 s (a host that is up polls all the time). */
function askHost(taskQueue: string) {
  return proxyActivities<Activities>({ taskQueue, scheduleToStartTimeout: '10s', startToCloseTimeout: '30s', retry: { maximumAttempts: 1 }, summary: 'does the host hold the workspace' });
}

export class WorkspaceHostBinding {
  private bound?: WorkspaceHost;
  private routed?: HostRoute;

  /** @param changed told when the host goes away, comes back, or the run moves. */
  constructor(private readonly changed: () => void = () => undefined) {}

  /** The host, for diagnostics and a continued run. */
  get host(): WorkspaceHost | undefined {
    return this.bound;
  }

  /** Where the workspace's activities go; undefined while the run is bound to no host. */
  get route(): HostRoute | undefined {
    return this.routed;
  }

  restore(host: WorkspaceHost | undefined): void {
    this.bound = host;
    this.routed = host && new HostRoute(host, this.changed);
  }

  /** The moves a person made (`cadre move`), in order. */
  readonly moves: { from: string; to: string; at: string }[] = [];

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
    let found: WorkspaceHost | null;
    try {
      found = await askHost(hostTaskQueue(host, workflowInfo().taskQueue)).locateWorkspace({ workspace });
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
    return this.bound === undefined || this.bound.solo;
  }
}

function moveRejected(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, 'MoveRejected');
}

function missing(workspace: string, why: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`workspace ${workspace} is on no host of the fleet: ${why}`, 'WorkspaceMissing');
}
