/**
 * Time inside workflows. The Temporal sandbox replaces `Date` with the time of the
 * current workflow task, so these values replay identically; this is the one place
 * workflow code reads the clock.
 */
export function nowMs(): number {
  return Date.now();
}

export function isoAt(ms: number): string {
  return new Date(ms).toISOString();
}
