import ms from 'ms';

const DURATION = /^\d+(\.\d+)?\s*(ms|s|m|h|d)$/;

/** True for durations written with a unit, like `200ms`, `30s`, `5m`, `1h`, `2d`. */
export function isDuration(text: string): boolean {
  return DURATION.test(text.trim());
}

/** Milliseconds of a duration that passed `isDuration`. */
export function durationMs(text: string): number {
  if (!isDuration(text)) throw new TypeError(`bad duration "${text}"`);
  return ms(text.trim() as ms.StringValue);
}

export function formatMs(value: number): string {
  if (value < 1000) return `${Math.round(value)}ms`;
  if (value < 60_000) return `${(value / 1000).toFixed(1)}s`;
  if (value < 3_600_000) return `${Math.floor(value / 60_000)}m${Math.round((value % 60_000) / 1000)}s`;
  return `${Math.floor(value / 3_600_000)}h${Math.round((value % 3_600_000) / 60_000)}m`;
}
