/**
 * The process that moves the embedded database's inbox into it (started by ./flusher.ts), so
 * PGlite's WebAssembly never runs on a worker's event loop: opening it takes ~0.4 s of CPU, which
 * would stall every workflow and activity of the worker meanwhile. It takes in what waits, again
 * on every message from the worker, and exits when idle, letting go of the database for `cadre
 * stats`. Usage: node flusher-main.js <dir>
 */
import { openAnalytics } from './database';
import { ingestPending } from './spool';

/**
 * Opening costs ~0.4 s of CPU: stay open while runs keep ending, but let go within seconds of the
 * last one, and after MAX_HOLD_MS in any case, so a waiting `cadre stats` gets its turn (it waits
 * up to 30 s); the worker starts another writer for parts that come later.
 */
const IDLE_EXIT_MS = 5000;
const MAX_HOLD_MS = 20_000;

async function main(dir: string): Promise<void> {
  // The worker may have exited meanwhile: a send on the closed channel would fail this process.
  const warn = (message: string) => void (process.connected && process.send?.({ warn: message }));
  const db = await openAnalytics({ kind: 'pglite', dir }, { create: true, waitMs: 30_000, warn });
  if (!db) return;
  let busy = false;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  const finish = async () => {
    if (busy) return;
    process.removeAllListeners('message');
    await db.close();
    process.exit(0);
  };
  const openedAt = Date.now();
  const idle = () => {
    clearTimeout(timer);
    timer = setTimeout(() => void finish(), Math.max(0, Math.min(IDLE_EXIT_MS, openedAt + MAX_HOLD_MS - Date.now())));
  };
  const drain = async () => {
    clearTimeout(timer);
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      do {
        again = false;
        await ingestPending(db, dir, warn);
      } while (again);
    } finally {
      busy = false;
      idle();
    }
  };
  process.on('message', () => void drain());
  idle();
}

main(process.argv[2]).catch((err: unknown) => {
  if (process.connected) process.send?.({ warn: `run analytics: cannot write to ${process.argv[2]}: ${err instanceof Error ? err.message : String(err)}; the runs wait in its inbox` });
  process.exitCode = 1;
});
