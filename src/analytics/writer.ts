/**
 * The worker's side of analytics: one open database for the `recordRunAnalytics` activity. An
 * embedded database is closed again soon after the last write, so `cadre stats` and `cadre watch`
 * in another process can open it; Postgres stays connected.
 */
import { type AnalyticsDb, type AnalyticsTarget, describeTarget, openAnalytics } from './database';
import { writeRunPart } from './record';
import type { RecordOutcome, RunAnalyticsPart } from './types';

/** An idle embedded database is let go after this; one held this long is let go when it next idles. */
const IDLE_CLOSE_MS = 1000;
const MAX_HOLD_MS = 5000;
/** A reader holds the embedded database for a second or two; wait well beyond that. */
const LOCK_WAIT_MS = 30_000;

export class AnalyticsWriter {
  private db?: Promise<AnalyticsDb | undefined>;
  private openedAt = 0;
  private busy = 0;
  private idle?: NodeJS.Timeout;

  constructor(private readonly target: AnalyticsTarget) {}

  async record(part: RunAnalyticsPart): Promise<RecordOutcome> {
    if (this.target.kind === 'off') return { recorded: false, why: 'run analytics are off on this worker (CADRE_ANALYTICS=off)' };
    this.busy++;
    clearTimeout(this.idle);
    try {
      const db = await this.open();
      if (!db) return { recorded: false, why: `no analytics database at ${describeTarget(this.target)}` };
      await db.transaction((query) => writeRunPart(query, part));
      return { recorded: true, where: db.where };
    } catch (err) {
      // The next write opens afresh: a broken connection or file is not kept.
      await this.close();
      throw err;
    } finally {
      this.busy--;
      if (this.busy === 0 && this.target.kind === 'pglite') {
        if (Date.now() - this.openedAt > MAX_HOLD_MS) await this.close();
        else this.idle = setTimeout(() => this.busy === 0 && void this.close(), IDLE_CLOSE_MS).unref();
      }
    }
  }

  async close(): Promise<void> {
    clearTimeout(this.idle);
    const db = this.db;
    this.db = undefined;
    await (await db?.catch(() => undefined))?.close();
  }

  private open(): Promise<AnalyticsDb | undefined> {
    if (!this.db) {
      this.openedAt = Date.now();
      this.db = openAnalytics(this.target, { create: true, waitMs: LOCK_WAIT_MS });
    }
    return this.db;
  }
}
