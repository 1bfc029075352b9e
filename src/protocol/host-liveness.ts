/** A fleet's host names, and when a host counts as gone (docs/operations.md, A fleet): one rule for `cadre workers` and the runs bound to it. */

/** What a host name may hold: it is part of a task queue's name and of a search attribute's value. */
export const HOST_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/**
 * A host is lost when it has polled for none of this long. The server keeps a poller's last poll
 * request, and an idle worker's long polls last up to a minute each: so twice that.
 * CADRE_HOST_LOST_AFTER on a host sets it for the runs it binds.
 */
export const HOST_LOST_AFTER_MS = 120_000;

export type HostState = 'up' | 'lost' | 'shared-only';

/** `up` while its own queue is polled; `lost` after `lostAfterMs` without; `shared-only` for a worker with no queue of its own. */
export function hostState(ownPollers: number, lastPollMs: number, now: number, lostAfterMs = HOST_LOST_AFTER_MS): HostState {
  if (ownPollers === 0) return 'shared-only';
  return now - lastPollMs > lostAfterMs ? 'lost' : 'up';
}

/** The host of a host's own queue (`cadre@build-1` → `build-1`): a host name has no `@`. */
export function hostOfQueue(taskQueue: string): string {
  return taskQueue.slice(taskQueue.lastIndexOf('@') + 1);
}

/** `4242@build-1` → `build-1`: the SDK's identity form, which cadre's workers keep with their host's name. */
export function hostOfIdentity(identity: string | null | undefined): string | undefined {
  const at = identity?.indexOf('@') ?? -1;
  return identity && at >= 0 && at < identity.length - 1 ? identity.slice(at + 1) : undefined;
}

const HOST_WAIT_PREFIX = 'host:';

/** The wait for an unreachable host (`host:build-1`, under an agent's step): no step's id has a `:`. */
export function hostWaitId(host: string, step?: string): string {
  return `${step === undefined ? '' : `${step}/`}${HOST_WAIT_PREFIX}${host}`;
}

/** The host a host wait waits for. */
export function hostOfWait(waitId: string): string {
  return waitId.slice(waitId.lastIndexOf('/') + 1 + HOST_WAIT_PREFIX.length);
}

/** A wait for an unreachable host, which no answer ends. */
export function isHostWait(waitId: unknown): boolean {
  return typeof waitId === 'string' && waitId.slice(waitId.lastIndexOf('/') + 1).startsWith(HOST_WAIT_PREFIX);
}
