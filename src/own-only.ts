/** Whether a file or directory is this user's and writable by no one else: what cadre runs as code (a compile cache) must be. */
import { fstatSync, statSync } from 'node:fs';

export function ownOnly(target: string | number): boolean {
  const stats = typeof target === 'number' ? fstatSync(target) : statSync(target);
  return stats.uid === process.getuid?.() && (stats.mode & 0o022) === 0;
}
