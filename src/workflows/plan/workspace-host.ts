/**
 * The host a run's workspace is bound to (docs/operations.md, A fleet): asked once as the run
 * starts, of the shared queue, whichever host takes it. An activity, not a local one: with a local
 * activity here, one query's replay in a loaded test run met a patch marker it had no command for
 * (not seen again alone); an activity is the well-trodden path, worth its few milliseconds a run.
 * The run's tool, worktree, compensation and agent activities then go to that host's own queue.
 * Workflow code.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import { CadreHost } from '../../protocol/definitions';
import type { Activities, WorkspaceHost } from '../../activities';
import { describeFailure } from '../common/failures';

/** Any host may take it: one that does not hold the workspace fails WorkspaceNotHere, retried until one that does takes it. */
const anyHost = proxyActivities<Activities>({
  // Named, as the steps' activities are, for the Web UI and `describe`.
  activityId: 'workspace-host',
  startToCloseTimeout: '30s',
  scheduleToCloseTimeout: '2m',
  retry: { initialInterval: '200ms', backoffCoefficient: 1.5, maximumInterval: '2s', nonRetryableErrorTypes: ['WorkspaceMissing'] },
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
    try {
      this.bound = (await anyHost.locateWorkspace({ workspace })) ?? undefined;
      if (this.bound?.indexed) upsertSearchAttributes([{ key: CadreHost, value: this.bound.host }]);
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      // The host's own words, without the failure's type before them.
      const message = describeFailure(err).message.replace(/^WorkspaceMissing: |^WorkspaceNotHere: /, '');
      throw missing(workspace, message.includes('the only host polling') ? message : `no host that took the question in 2 minutes holds it; the last: ${message}`);
    }
  }

  /** The host's own queue, where the workspace's activities go; undefined while the run is bound to none. */
  get taskQueue(): string | undefined {
    return this.bound?.taskQueue;
  }

  /** Local activities run on whichever worker runs the run: only a host polling alone is sure to be it. */
  allowsLocal(): boolean {
    return this.bound === undefined || this.bound.solo;
  }
}

function missing(workspace: string, why: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`workspace ${workspace} is on no host of the fleet: ${why}`, 'WorkspaceMissing');
}
