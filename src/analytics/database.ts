/**
 * Where finished runs are recorded: PGlite (Postgres in WebAssembly) in a folder of the worker's
 * machine by default, or any Postgres when CADRE_DATABASE_URL is set. Both speak the same SQL.
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { acquireLock } from './lock';
import { seedDataDir } from './pglite-template';
import { SCHEMA_SQL } from './schema';
import { hasPending, ingestPending } from './spool';
import type { AnalyticsDb, Query } from './types';

export type AnalyticsTarget = { kind: 'off' } | { kind: 'pglite'; dir: string } | { kind: 'postgres'; url: string };

/** CADRE_ANALYTICS=off turns recording off; CADRE_DATABASE_URL picks Postgres; else PGlite in CADRE_ANALYTICS_DIR or ~/.cadre/analytics. */
export function analyticsTarget(env: NodeJS.ProcessEnv = process.env): AnalyticsTarget {
  if (['off', 'false', '0', 'no'].includes((env.CADRE_ANALYTICS ?? '').trim().toLowerCase())) return { kind: 'off' };
  const url = env.CADRE_DATABASE_URL?.trim();
  if (url) return { kind: 'postgres', url };
  return { kind: 'pglite', dir: path.resolve(env.CADRE_ANALYTICS_DIR || path.join(os.homedir(), '.cadre', 'analytics')) };
}

/** The target for messages: a Postgres URL without its password. */
export function describeTarget(target: AnalyticsTarget): string {
  if (target.kind === 'off') return 'nowhere (CADRE_ANALYTICS=off)';
  if (target.kind === 'pglite') return target.dir;
  try {
    const url = new URL(target.url);
    if (url.password) url.password = '***';
    return url.toString();
  } catch {
    return 'the database of CADRE_DATABASE_URL (not a valid URL)';
  }
}

export type { AnalyticsDb, Query } from './types';

export interface OpenOptions {
  /** Create the embedded database when it does not exist yet (writers); readers find nothing instead. */
  create: boolean;
  /** How long to wait for another process that has the embedded database open. */
  waitMs: number;
  onWait?: (holder: number) => void;
  /** Problems that do not stop the opening (a waiting run's file that cannot be read). */
  warn?: (message: string) => void;
}

/** Opens the target, with the tables in place; undefined when it is off, or embedded and not created yet. */
export async function openAnalytics(target: AnalyticsTarget, options: OpenOptions): Promise<AnalyticsDb | undefined> {
  if (target.kind === 'off') return undefined;
  const db = target.kind === 'postgres' ? await openPostgres(target.url) : await openPglite(target.dir, options);
  if (!db) return undefined;
  try {
    await db.transaction(async (query) => {
      for (const statement of SCHEMA_SQL.split(';').map((s) => s.trim()).filter(Boolean)) await query(statement);
    });
    // Runs the worker has not moved in yet: whoever opens the embedded database takes them in.
    if (target.kind === 'pglite') await ingestPending(db, target.dir, options.warn);
    return db;
  } catch (err) {
    await db.close();
    throw err;
  }
}

async function openPglite(dir: string, options: OpenOptions): Promise<AnalyticsDb | undefined> {
  const dataDir = path.join(dir, 'pgdata');
  if (!options.create && !existsSync(dataDir) && !hasPending(dir)) return undefined;
  await mkdir(dir, { recursive: true });
  const release = await acquireLock(path.join(dir, 'lock'), options);
  try {
    // Loaded on first use: the WebAssembly build is large, and most commands never need it.
    const { PGlite } = await import('@electric-sql/pglite');
    if (!existsSync(dataDir)) await seedDataDir(dataDir, PGlite);
    const pg = await PGlite.create(dataDir);
    const query: Query = async (sql, params) => (await pg.query(sql, params)).rows as never;
    return {
      where: dir,
      query,
      transaction: (fn) => pg.transaction(async (tx) => fn(async (sql, params) => (await tx.query(sql, params)).rows as never)),
      close: async () => {
        try {
          await pg.close();
        } finally {
          await release();
        }
      },
    };
  } catch (err) {
    await release();
    throw err;
  }
}

async function openPostgres(url: string): Promise<AnalyticsDb> {
  const { Pool } = await import('pg');
  // Idle connections close by themselves and do not keep a CLI process alive.
  const pool = new Pool({ connectionString: url, max: 4, idleTimeoutMillis: 10_000, allowExitOnIdle: true });
  const query: Query = async (sql, params) => (await pool.query(sql, params as unknown[])).rows;
  return {
    where: describeTarget({ kind: 'postgres', url }),
    query,
    transaction: async (fn) => {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await fn(async (sql, params) => (await client.query(sql, params as unknown[])).rows);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

/** Opens the target for reading, runs `fn`, and lets go; undefined when nothing was ever recorded there. */
export async function withAnalytics<T>(target: AnalyticsTarget, options: Omit<OpenOptions, 'create'>, fn: (query: Query) => Promise<T>): Promise<T | undefined> {
  const db = await openAnalytics(target, { ...options, create: false });
  if (!db) return undefined;
  try {
    return await fn(db.query);
  } finally {
    await db.close();
  }
}
