/**
 * Where a fleet's workspace activities go (docs/operations.md, A fleet), and what a run does when
 * that host goes away. Each routed activity waits at most `lostAfterMs` to start on the host's own
 * queue; when it has not started by then, a question on the shared queue asks whether the host
 * still polls. A host that polls is only busy: the activity goes back on its queue. A host that
 * does not is unreachable: the workflow shows a `host` wait, and the activity waits on the host's
 * queue (in long stretches), so the host's return starts it at once. `cadre move` gives up on the
 * host: the waiting activities are cancelled and scheduled again on the new host's queue.
 * Workflow code.
 */
import { type ActivityOptions, type Duration, TimeoutType } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import { ActivityFailure, type ActivityInterfaceFor, ApplicationFailure, CancellationScope, TimeoutFailure, isCancellation, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../../activities';
import type { Waiting } from '../../protocol/definitions';
import { HOST_LOST_AFTER_MS, hostOfQueue, hostWaitId } from '../../protocol/host-liveness';
import { isoAt, nowMs } from './clock';
import { findCause } from './failures';

/** A local activity that ran on another host's worker (activities/workspace-host.ts). */
const NOT_ON_HOST = 'NotOnHost';

/** How long a routed activity waits on an unreachable host's queue before it is scheduled there again. */
const UNREACHABLE_WAIT_MS = 10 * 60 * 1000;

/** The question of whether a host polls: on the shared queue, where any host answers. */
const anyHost = proxyActivities<Activities>({ startToCloseTimeout: '30s', retry: { initialInterval: '1s', maximumInterval: '10s' }, summary: 'is the host up' });

/** A route's start, as recorded in history (the binding's result, an agent's input). */
export interface HostRouteSpec {
  taskQueue: string;
  /** A host whose own queue has had no poll for this long is lost (CADRE_HOST_LOST_AFTER of the host that bound it). */
  lostAfterMs?: number;
  /** The only host polling when the run was bound: its local activities, which run wherever the run does, may stay local. */
  solo?: boolean;
}

export class HostRoute {
  private queue: string;
  private alone: boolean;
  private unreachableSinceMs?: number;
  /** Each routed activity not yet ended, by the queue it was scheduled on. */
  private readonly pending = new Map<CancellationScope, string>();
  private asking?: Promise<boolean>;

  constructor(
    private readonly spec: HostRouteSpec,
    /** Told when the host becomes unreachable, comes back, or the run moves. */
    private readonly changed: () => void = () => undefined,
  ) {
    this.queue = spec.taskQueue;
    this.alone = spec.solo === true;
  }

  /** Local activities run on whichever worker runs the workflow: only a host polling alone is sure to be it. */
  get solo(): boolean {
    return this.alone;
  }

  get taskQueue(): string {
    return this.queue;
  }

  get host(): string {
    return hostOfQueue(this.queue);
  }

  get lostAfterMs(): number {
    return this.spec.lostAfterMs ?? HOST_LOST_AFTER_MS;
  }

  /** What a child workflow is told of the route (AgentTaskInput): its own route starts where this one is. */
  childInput(): { hostQueue: string; hostLostAfterMs?: number } {
    return { hostQueue: this.queue, ...(this.spec.lostAfterMs !== undefined && { hostLostAfterMs: this.spec.lostAfterMs }) };
  }

  /** The same for a forEach chunk, whose local activities follow the run's. */
  chunkInput(): { hostQueue: string; hostLostAfterMs?: number; hostSolo?: true } {
    return { ...this.childInput(), ...(this.alone && { hostSolo: true as const }) };
  }

  /**
   * The `host` wait while the host is unreachable: ended by the host's return or `cadre move`, never
   * by an answer. Its id (`host:<name>`, under an agent's step) cannot be a step's.
   */
  waiting(step?: string): Waiting | undefined {
    if (this.unreachableSinceMs === undefined) return undefined;
    const prompt = `host ${this.host} unreachable: its workspace's activities wait for it to come back, or for \`cadre move <run> --to <host>\``;
    return { id: hostWaitId(this.host, step), kind: 'host', prompt, since: isoAt(this.unreachableSinceMs) };
  }

  /** Learns from a child's own route (an agent's) that the host stopped answering. */
  lostElsewhere(host: string): void {
    if (host === this.host) this.lost(this.queue);
  }

  /** Sends what waits for the old host to `taskQueue` (`solo` as the new host answered). */
  move(taskQueue: string, solo = false): void {
    if (taskQueue === this.queue) return;
    this.queue = taskQueue;
    this.alone = solo;
    this.unreachableSinceMs = undefined;
    for (const [scope, queue] of this.pending) if (queue !== taskQueue) scope.cancel();
    this.changed();
  }

  /**
   * A call that may run as a local activity while the host polls alone (`local`, told the host it
   * must run on), else on the host's queue (`routed`). A local activity runs on whichever worker ran
   * the workflow task: when a host that joined later ran it, the call goes to the host's queue, and
   * so does every later one (the host no longer polls alone).
   */
  viaLocal<T>(local: (onHost: { onHost: string }) => Promise<T>, routed: () => Promise<T>): Promise<T> {
    if (!this.alone) return routed();
    // Scheduled at once, with no await before it: commands keep their recorded order.
    return local({ onHost: this.host }).catch((err: unknown) => {
      if (!findCause(err, (e) => e instanceof ApplicationFailure && e.type === NOT_ON_HOST)) throw err;
      this.alone = false;
      return routed();
    });
  }

  /** Runs one activity on the host's queue, through its going away and the run's moving. */
  async run<T>(schedule: (options: { taskQueue: string; scheduleToStartTimeout: Duration }, round: number) => Promise<T>, longestWaitMs = UNREACHABLE_WAIT_MS): Promise<T> {
    for (let round = 1; ; round++) {
      const queue = this.queue;
      const scope = new CancellationScope();
      this.pending.set(scope, queue);
      try {
        const wait = this.unreachableSinceMs === undefined ? Math.min(this.lostAfterMs, longestWaitMs) : longestWaitMs;
        const result = await scope.run(() => schedule({ taskQueue: queue, scheduleToStartTimeout: wait }, round));
        this.reached(queue);
        return result;
      } catch (err) {
        if (this.queue !== queue && isCancellation(err) && !CancellationScope.current().consideredCancelled) continue;
        if (!notStarted(err)) {
          // The host took it and answered, if only with a failure: it is there.
          if (err instanceof ActivityFailure && !isCancellation(err)) this.reached(queue);
          throw err;
        }
        if (this.queue === queue && this.unreachableSinceMs === undefined && !(await this.polled())) this.lost(queue);
      } finally {
        this.pending.delete(scope);
      }
    }
  }

  /** Whether the host still polls: one question at a time, however many activities wait. */
  private polled(): Promise<boolean> {
    this.asking ??= anyHost.hostPolling({ taskQueue: this.queue, lostAfterMs: this.lostAfterMs }).finally(() => (this.asking = undefined));
    return this.asking;
  }

  private lost(queue: string): void {
    if (this.queue !== queue || this.unreachableSinceMs !== undefined) return;
    this.unreachableSinceMs = nowMs();
    this.changed();
  }

  private reached(queue: string): void {
    if (this.queue !== queue || this.unreachableSinceMs === undefined) return;
    this.unreachableSinceMs = undefined;
    this.changed();
  }
}

function notStarted(err: unknown): boolean {
  return err instanceof ActivityFailure && err.cause instanceof TimeoutFailure && err.cause.timeoutType === TimeoutType.SCHEDULE_TO_START;
}

/**
 * A named activity scheduled again takes a name of its own (`slow~2`): one given up on may still be
 * pending (its cancellation not yet recorded), and two pending activities cannot share an id.
 */
function again(activityId: string | undefined, round: number): { activityId?: string } {
  return activityId === undefined || round === 1 ? {} : { activityId: `${activityId}~${round}` };
}

/**
 * A routed activity's options: it heartbeats, so an attempt on a host that died is timed out in
 * seconds and the route finds the host gone, rather than when the attempt's start-to-close ends.
 */
export type RoutedOptions = ActivityOptions & { heartbeatTimeout: Duration };

/** The activities with `options`, on the route's host when there is one, as they are when there is none. */
export function hostActivities(options: RoutedOptions, route: HostRoute | undefined): ActivityInterfaceFor<Activities> {
  if (route === undefined) return proxyActivities<Activities>(options);
  // A wait to start must end before the whole activity's: that timeout would not say it never started.
  const longestWaitMs = options.scheduleToCloseTimeout === undefined ? UNREACHABLE_WAIT_MS : Math.min(UNREACHABLE_WAIT_MS, msToNumber(options.scheduleToCloseTimeout) / 2);
  return new Proxy({} as ActivityInterfaceFor<Activities>, {
    get: (_, name: string) =>
      (...args: unknown[]) =>
        route.run((onHost, round) => (proxyActivities<Activities>({ ...options, ...onHost, ...again(options.activityId, round) }) as Record<string, (...a: unknown[]) => Promise<unknown>>)[name](...args), longestWaitMs),
  });
}
