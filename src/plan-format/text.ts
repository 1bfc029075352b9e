/** Wording helpers for messages that quote what a user wrote. Pure. */

/** A user's text, cut visibly (`…`) when long, so one message never carries a megabyte. */
export function shorten(text: string, max = 60): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}… (${text.length.toLocaleString('en-US')} characters)`;
}

/** `12 B`, `3.4 KiB`, `10.0 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}

/** `12,345`. */
export function formatCount(count: number): string {
  return Math.round(count).toLocaleString('en-US');
}
