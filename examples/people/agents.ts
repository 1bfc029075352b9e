/**
 * The people example's agents, typed TypeScript objects whose methods are tools:
 * - `records.executeQuery` runs one read-only SQL query against the records database: PGlite
 *   (Postgres in WebAssembly, in this process, seeded from people.sql), or the Postgres at
 *   DATABASE_URL when it is set;
 * - `analysis.analyzeData` groups and counts rows.
 * The worker loads this module because cadre.config.yaml lists it under tools.modules.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { defineAgent } from '../../src/tools/define';

interface Database {
  query(sql: string, params: unknown[]): Promise<Record<string, unknown>[]>;
}

let database: Promise<Database> | undefined;

/** The records database, opened and seeded once per worker. */
function db(): Promise<Database> {
  database ??= open().catch((err: unknown) => {
    database = undefined;
    throw err;
  });
  return database;
}

async function open(): Promise<Database> {
  const seed = readFileSync(path.join(__dirname, 'people.sql'), 'utf8');
  if (process.env.DATABASE_URL) {
    const { Pool } = await import('pg');
    const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: 4 });
    await pool.query(seed);
    return {
      query: async (sql, params) => {
        const client = await pool.connect();
        try {
          return await runIn(client, sql, params);
        } finally {
          client.release();
        }
      },
    };
  }
  const { PGlite } = await import('@electric-sql/pglite');
  const lite = new PGlite();
  await lite.exec(seed);
  return {
    query: (sql, params) =>
      lite.transaction(async (tx) => {
        await tx.exec('SET TRANSACTION READ ONLY');
        return (await tx.query<Record<string, unknown>>(sql, params)).rows;
      }),
  };
}

type PgClient = { query(sql: string, params?: unknown[]): Promise<{ rows: Record<string, unknown>[] }> };

/** One query in a read-only transaction: a query that tries to write fails, whatever its text. */
async function runIn(client: PgClient, sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
  await client.query('BEGIN READ ONLY');
  try {
    const { rows } = await client.query(sql, params);
    await client.query('COMMIT');
    return rows;
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
}

export const records = defineAgent({
  name: 'records',
  description: 'The people records database (tables people and skills)',
  methods: {
    executeQuery: {
      description: 'Run one read-only SQL query with $1-style parameters; returns the rows.',
      parameters: z.object({
        sql: z.string().min(1).max(4000).refine((s) => !s.replace(/;\s*$/, '').includes(';'), 'one statement only'),
        params: z.array(z.union([z.string(), z.number(), z.boolean(), z.null()])).max(20).default([]),
      }),
      handler: async ({ sql, params }) => {
        const rows = await (await db()).query(sql, params);
        return { rows, count: rows.length };
      },
    },
  },
});

export const analysis = defineAgent({
  name: 'analysis',
  description: 'Analysis of rows',
  methods: {
    analyzeData: {
      description: 'Group rows by a column and count them, largest group first.',
      parameters: z.object({
        rows: z.array(z.record(z.string(), z.unknown())).max(100_000),
        groupBy: z.string().min(1).max(100),
      }),
      handler: ({ rows, groupBy }) => {
        const counts = new Map<string, number>();
        for (const row of rows) {
          const key = String(row[groupBy] ?? '(none)');
          counts.set(key, (counts.get(key) ?? 0) + 1);
        }
        const groups = [...counts].map(([value, count]) => ({ [groupBy]: value, count, share: rows.length ? Math.round((count / rows.length) * 1000) / 10 : 0 }));
        groups.sort((a, b) => b.count - a.count || String(a[groupBy]).localeCompare(String(b[groupBy])));
        return { total: rows.length, groupBy, groups };
      },
    },
  },
});
