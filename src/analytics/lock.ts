/**
 * A lock file next to the embedded database: PGlite serves one process at a time, so the worker
 * that writes and `cadre stats` that reads take turns. A lock whose process is gone is taken over.
 */
import { open, readFile, unlink } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { isAlive } from '../process-alive';

export class LockBusyError extends Error {
  constructor(
    readonly file: string,
    readonly holder: number,
  ) {
    super(`the analytics database is in use by process ${holder} (lock ${file})`);
  }
}

export interface LockOptions {
  /** How long to wait for a holder to let go. */
  waitMs: number;
  /** Called once when the lock is held by another process and the caller starts waiting. */
  onWait?: (holder: number) => void;
}

/** Takes the lock; the returned function releases it. */
export async function acquireLock(file: string, { waitMs, onWait }: LockOptions): Promise<() => Promise<void>> {
  const deadline = Date.now() + waitMs;
  let told = false;
  let unreadableSince: number | undefined;
  for (;;) {
    try {
      const handle = await open(file, 'wx');
      await handle.writeFile(String(process.pid));
      await handle.close();
      return () => unlink(file).catch(() => undefined);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const holder = await holderOf(file);
    if (holder === undefined) {
      // Its process is writing its pid, or died before it could: a lock empty for a second is stale.
      unreadableSince ??= Date.now();
      if (Date.now() - unreadableSince > 1000) await unlink(file).catch(() => undefined);
      else await delay(20);
      continue;
    }
    unreadableSince = undefined;
    if (!isAlive(holder)) {
      await unlink(file).catch(() => undefined);
      continue;
    }
    if (Date.now() >= deadline) throw new LockBusyError(file, holder);
    if (!told) onWait?.(holder);
    told = true;
    await delay(50);
  }
}

async function holderOf(file: string): Promise<number | undefined> {
  const text = await readFile(file, 'utf8').catch(() => '');
  const pid = Number(text.trim());
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}

