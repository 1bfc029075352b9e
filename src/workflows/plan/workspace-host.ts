/**
 * The host a run's workspace is bound to (docs/operations.md, A fleet): asked once as the run
 * starts, first of its own worker (a local activity, nothing to route when that host holds it and
 * polls alone), then of the shared queue, whichever host takes it. The run's tool, worktree and
 * compensation activities then go to that host's own queue. Workflow code.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { Activities, WorkspaceHost } from '../../activities';
import { describeFailure } from '../common/failures';

const here = proxyLocalActivities<Activities>({ startToCloseTimeout: '30s', retry: { maximumAttempts: 2 }, summary: 'which host holds the workspace' });

/** Any host may take it: one that does not hold the workspace fails WorkspaceNotHere, retried until one that does takes it. */
const anyHost = proxyActivities<Activities>({
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '2m',
  retry: { initialInterval: '200ms', backoffCoefficient: 1.5, maximumInterval: '2s' },
  summary: 'which host holds the workspace',
});

export class WorkspaceHostBinding {
  private bound?: WorkspaceHost;

  /** The host, for diagnostics and a continued run. */
  get host(): WorkspaceHost | undefined {
    return this.bound;
  }

  restore(host: WorkspaceHost | undefined): void {
    this.bound = host;
  }

  /**
   * Binds the workspace to the host that holds it, or leaves the run unbound when its worker has no
   * host (no fleet). No host holding it fails the run's start with WorkspaceMissing.
   */
  async bind(workspace: string): Promise<void> {
    const local = await here.locateWorkspace({ workspace, hereOnly: true });
    if (local === null) return;
    if ('host' in local) {
      this.bound = local;
      return;
    }
    if (local.hosts <= 1) throw missing(workspace, `${local.notHere}, the only host polling`);
    try {
      this.bound = (await anyHost.locateWorkspace({ workspace, hereOnly: false })) as WorkspaceHost;
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      throw missing(workspace, `no host that took the question in 2 minutes holds it; the last: ${describeFailure(err)}`);
    }
  }

  /** What a workspace activity's options add: the host's own queue. */
  queue(): { taskQueue?: string } {
    return this.bound ? { taskQueue: this.bound.taskQueue } : {};
  }

  /** Local activities run on whichever worker runs the run: only a host polling alone is sure to be it. */
  allowsLocal(): boolean {
    return this.bound === undefined || this.bound.solo;
  }
}

function missing(workspace: string, why: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`workspace ${workspace} is on no host of the fleet: ${why}`, 'WorkspaceMissing');
}
