/**
 * The worker's side of analytics, behind the `recordRunAnalytics` activity.
 * - Postgres: each part is written at once, over a pool that stays connected.
 * - The embedded database: each part is dropped into its inbox (./spool.ts), and a process of its
 *   own takes it in (./flusher.ts), so a run's end never waits for PGlite to open and PGlite never
 *   runs on the worker's event loop.
 */
import { type AnalyticsDb, type AnalyticsTarget, openAnalytics } from './database';
import { InboxFlusher } from './flusher';
import { writeRunPart } from './record';
import { spoolPart } from './spool';
import type { RecordOutcome, RunAnalyticsPart } from './types';

export class AnalyticsWriter {
  private db?: Promise<AnalyticsDb | undefined>;
  private readonly flusher?: InboxFlusher;

  constructor(
    private readonly target: AnalyticsTarget,
    warn: (message: string) => void = () => undefined,
  ) {
    if (target.kind === 'pglite') this.flusher = new InboxFlusher(target.dir, warn);
  }

  async record(part: RunAnalyticsPart): Promise<RecordOutcome> {
    const { target } = this;
    if (target.kind === 'off') return { recorded: false, why: 'run analytics are off on this worker (CADRE_ANALYTICS=off)' };
    if (target.kind === 'pglite') {
      await spoolPart(target.dir, part);
      this.flusher?.nudge();
      return { recorded: true, where: target.dir };
    }
    try {
      this.db ??= openAnalytics(target, { create: true, waitMs: 0 });
      const db = (await this.db) as AnalyticsDb;
      await db.transaction((query) => writeRunPart(query, part));
      return { recorded: true, where: db.where };
    } catch (err) {
      // The next write connects afresh: a broken pool is not kept.
      const db = this.db;
      this.db = undefined;
      await (await db?.catch(() => undefined))?.close();
      throw err;
    }
  }
}
