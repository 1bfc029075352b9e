/**
 * A run's git worktrees as leases: made (idempotently) by the first step that needs one, shared
 * by the steps of the same repo and task, and released when the run ends, however it ends:
 * removed by their cleanup policy, kept with their files listed when they hold uncommitted work.
 * Workflow code.
 */
import { ActivityFailure, ApplicationFailure, isCancellation, patched, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import { CLONE_REPO, type CompiledStep, type ForkWorktree, type WorktreeSpec } from '../../plan-format/types';
import type { StepRecord, WorktreeRecord } from '../../protocol/definitions';
import { describeFailure } from '../common/failures';
import { type HostRoute, hostActivities } from '../common/host-route';

type Info = Awaited<ReturnType<Activities['createWorktree']>>;

const GIT_OPTIONS = {
  startToCloseTimeout: '2m',
  // The activities heartbeat: a worker that dies mid-way is noticed in seconds, and the retry adopts its work.
  heartbeatTimeout: '5s',
  retry: { initialInterval: '1s', backoffCoefficient: 2, maximumAttempts: 5 },
  summary: 'worktree',
} as const;

/** The git activities, on the queue of the host that holds the repository when the run is bound to one. */
function git(route: HostRoute | undefined) {
  return hostActivities(GIT_OPTIONS, route);
}

interface Lease {
  spec: WorktreeSpec;
  pending: Promise<Info>;
  info?: Info;
  record: WorktreeRecord;
  /** A worktree of the run's clone made on a host the run has left: made again, from its push, before its next use. */
  left?: true;
}

export type RunOutcome = 'completed' | 'failed' | 'cancelled';

/** A step in a worktree records the worktree as it left it, for forks (docs/forks.md); older runs did not. */
const PATCH_WORKTREE_SNAPSHOTS = 'worktree-snapshots';

const leaseKey = (spec: { repo: string; task: string }) => `${spec.repo}\0${spec.task}`;

export class WorktreeLeases {
  private readonly leases = new Map<string, Lease>();
  /** A fork's run: its worktrees are its own, those its restored steps worked in made from where they left them. */
  private fork?: { run: string; starts: Map<string, ForkWorktree> };

  constructor(
    private readonly plan: string,
    private readonly changed: () => void,
    /** The queue of the host the run's workspace is bound to (workspace-host.ts). */
    private readonly hostRoute: () => HostRoute | undefined = () => undefined,
    /** The run's clone, where a worktree of CLONE_REPO is made (a workspace cloned from a repository). */
    private readonly clonePath: () => string = () => '',
  ) {}

  get size(): number {
    return this.leases.size;
  }

  /** The worktree of `spec`, made on first use; a failed attempt is forgotten so a retried step tries again. */
  async lease(spec: WorktreeSpec, step: string): Promise<Info> {
    const key = leaseKey(spec);
    let lease = this.leases.get(key);
    // A lease left on another host stays until its remake works: a retry needs what it started from.
    const left = lease?.left ? lease : undefined;
    if (!lease || left) {
      // Made again where the run moved: from its push, counting from the commit it first started from.
      const startedFrom = lease?.info?.baseCommit;
      const pending = git(this.hostRoute()).createWorktree({
        repo: this.repoOf(spec),
        plan: this.plan,
        task: spec.task,
        ...(spec.base !== undefined && { base: spec.base }),
        run: workflowInfo().workflowId,
        step,
        ...(startedFrom !== undefined && { startedFrom }),
        ...(this.fork && { fork: forkStart(this.fork.run, this.fork.starts.get(key)) }),
      });
      const record: WorktreeRecord = lease ? { ...lease.record, state: 'creating' } : { repo: spec.repo, task: spec.task, state: 'creating' };
      delete record.note;
      lease = { spec, pending, record };
      this.leases.set(key, lease);
      this.changed();
    }
    try {
      const info = await lease.pending;
      if (!lease.info) {
        lease.info = info;
        Object.assign(lease.record, { path: info.path, branch: info.branch, state: 'active' });
        this.changed();
      }
      return info;
    } catch (err) {
      if (this.leases.get(key) === lease) {
        if (left) this.leases.set(key, left);
        else this.leases.delete(key);
      }
      this.changed();
      throw err;
    }
  }

  /**
   * `work`, the action of a step in a worktree, and once it succeeded a snapshot of the worktree
   * as the step left it, in the step's record. Anything else is `work` itself, untouched.
   */
  afterStep<T>(step: CompiledStep, record: StepRecord, work: Promise<T>): Promise<T> {
    const spec = step.worktree;
    if (!spec || spec.repo === CLONE_REPO || !patched(PATCH_WORKTREE_SNAPSHOTS)) return work;
    return work.then(async (output) => {
      const lease = this.leases.get(leaseKey(spec));
      if (!lease) return output;
      const info = lease.info ?? (await lease.pending);
      try {
        const snapshot = await git(this.hostRoute()).snapshotWorktree({ path: info.path, run: workflowInfo().workflowId, step: step.id });
        record.worktree = { snapshot, baseCommit: info.baseCommit };
      } catch (err) {
        // The step did its work: no snapshot only means a fork cannot restore this worktree (it says so then).
        if (isCancellation(err)) throw err;
      }
      return output;
    });
  }

  /** A fork's run (fork-start.ts): the worktrees its restored steps worked in, to start its own from. */
  forked(run: string, worktrees: ForkWorktree[]): void {
    this.fork = { run, starts: new Map(worktrees.map((w) => [leaseKey(w), w])) };
  }

  /** What a fork's run still starts its worktrees from, for the run it continues as. */
  forkStarts(): ForkWorktree[] {
    return [...(this.fork?.starts.values() ?? [])];
  }

  /** Ends every lease by its cleanup policy. Never throws: what could not be removed is recorded. */
  async release(outcome: RunOutcome): Promise<void> {
    for (const lease of this.leases.values()) {
      const { spec, info, record } = lease;
      if (lease.left) {
        record.note = 'left on the host the run moved from (its worker removes it when it starts again): its work is on its pushed branch';
        continue;
      }
      if (!info) {
        record.state = 'kept';
        record.note = 'the run ended while it was being made; `cadre worktrees` lists it if it exists';
        continue;
      }
      const remove = spec.cleanup === 'always' || (spec.cleanup === 'onSuccess' && outcome === 'completed');
      if (!remove) {
        record.state = 'kept';
        record.note = spec.cleanup === 'never' ? 'cleanup: never' : `the run ${outcome}: kept to look at (cleanup: onSuccess)`;
        continue;
      }
      try {
        const removed = await git(this.hostRoute()).removeWorktree({ repo: this.repoOf(spec), path: info.path });
        record.state = 'removed';
        record.note = removed.keptBranch ? `its commits stay on branch ${removed.keptBranch}` : removed.reason;
      } catch (err) {
        record.state = 'kept';
        record.note = describeFailure(err).message;
        const files = uncommittedFiles(err);
        if (files) record.files = files;
      }
      this.changed();
    }
  }

  /** Where the repository of `spec` is: the run's clone, wherever it is now, for CLONE_REPO. */
  private repoOf(spec: WorktreeSpec): string {
    return spec.repo === CLONE_REPO ? this.clonePath() : spec.repo;
  }

  /**
   * The run's clone moved to another host: its worktrees there are made again before their next
   * use, from what was pushed (the steps that used them pushed their work as they ended).
   */
  hostMoved(): void {
    for (const lease of this.leases.values()) {
      if (lease.spec.repo !== CLONE_REPO || !lease.info || lease.left) continue;
      lease.left = true;
      Object.assign(lease.record, { state: 'kept', note: 'left on the host the run moved from: made again from its push when next used' });
    }
    this.changed();
  }

  /** The worktree of the run's clone a step worked in, to push with the step's work (workspace-host.ts). */
  ofClone(spec: WorktreeSpec | undefined): { path: string; branch: string; task: string } | undefined {
    const lease = spec?.repo === CLONE_REPO ? this.leases.get(leaseKey(spec)) : undefined;
    return lease?.info && !lease.left ? { path: lease.info.path, branch: lease.info.branch, task: lease.spec.task } : undefined;
  }

  records(): WorktreeRecord[] {
    return [...this.leases.values()].map((lease) => ({ ...lease.record }));
  }

  /** The leases made, for a run that continues as new: they are released when the last run ends. */
  carried(): CarriedLease[] {
    return [...this.leases.values()].flatMap(({ spec, info, record, left }) => (info ? [{ spec, info, record: { ...record }, ...(left && { left }) }] : []));
  }

  restore(leases: CarriedLease[]): void {
    for (const { spec, info, record, left } of leases) this.leases.set(leaseKey(spec), { spec, info, pending: Promise.resolve(info), record, ...(left && { left }) });
  }
}

function forkStart(run: string, start: ForkWorktree | undefined): { run: string; snapshot?: string; baseCommit?: string } {
  return { run, ...(start && { snapshot: start.snapshot, baseCommit: start.baseCommit }) };
}

export interface CarriedLease {
  spec: WorktreeSpec;
  info: Info;
  record: WorktreeRecord;
  left?: true;
}

function uncommittedFiles(err: unknown): string[] | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (!(cause instanceof ApplicationFailure) || cause.type !== 'WorktreeDirty') return undefined;
  const details = cause.details?.[0] as { files?: unknown } | undefined;
  return Array.isArray(details?.files) ? details.files.map(String) : undefined;
}
