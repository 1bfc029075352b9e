/**
 * Opens (creating) the embedded analytics database in each folder given, and checks its schema is
 * in place. A process of its own: PGlite loads its WebAssembly by dynamic import, which jest refuses.
 * Usage: tsx test/support/analytics-open.ts <dir>...
 */
import { openAnalytics } from '../../src/analytics/database';

async function main(): Promise<void> {
  for (const dir of process.argv.slice(2)) {
    const db = await openAnalytics({ kind: 'pglite', dir }, { create: true, waitMs: 10_000 });
    if (!db) throw new Error(`no database in ${dir}`);
    try {
      const [{ n }] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM cadre_runs');
      if (n !== 0) throw new Error(`a new database holds ${n} runs`);
    } finally {
      await db.close();
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
