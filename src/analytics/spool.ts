/**
 * The embedded database's inbox. The worker's activity drops each finished run's part here as a
 * file (a write and a rename: milliseconds, and durable), so no run waits for PGlite to open; the
 * worker moves them into the database soon after, and so does any reader (`cadre stats`) that
 * opens it first. Taking a file in twice changes nothing (writeRunPart is idempotent).
 */
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readFile, rename, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { writeRunPart } from './record';
import type { AnalyticsDb, RunAnalyticsPart } from './types';

const PENDING = 'pending';
const REJECTED = 'rejected';

export async function spoolPart(dir: string, part: RunAnalyticsPart): Promise<void> {
  const pending = path.join(dir, PENDING);
  await mkdir(pending, { recursive: true });
  // One name per part of a run: a retried activity replaces its own file.
  const name = `${encodeURIComponent(part.runId)}.${part.humanWaitsFrom}.json`;
  const temporary = path.join(pending, `.${name}.${process.pid}.tmp`);
  await writeFile(temporary, JSON.stringify(part));
  await rename(temporary, path.join(pending, name));
}

export function hasPending(dir: string): boolean {
  const pending = path.join(dir, PENDING);
  return existsSync(pending) && readdirSync(pending).some((name) => name.endsWith('.json'));
}

/** Moves every waiting part into the database, in one transaction; returns how many. */
export async function ingestPending(db: AnalyticsDb, dir: string, warn: (message: string) => void = () => undefined): Promise<number> {
  const pending = path.join(dir, PENDING);
  if (!existsSync(pending)) return 0;
  const files = readdirSync(pending).filter((name) => name.endsWith('.json') && !name.startsWith('.'));
  if (files.length === 0) return 0;
  const parts: { file: string; part: RunAnalyticsPart }[] = [];
  for (const name of files) {
    const file = path.join(pending, name);
    try {
      parts.push({ file, part: JSON.parse(await readFile(file, 'utf8')) as RunAnalyticsPart });
    } catch (err) {
      // Not ours to guess at: kept aside for a person, out of the way of the others.
      await mkdir(path.join(dir, REJECTED), { recursive: true });
      await rename(file, path.join(dir, REJECTED, name)).catch(() => undefined);
      warn(`run analytics: ${name} cannot be read (${(err as Error).message}); moved to ${path.join(dir, REJECTED)}`);
    }
  }
  await db.transaction(async (query) => {
    for (const { part } of parts) await writeRunPart(query, part);
  });
  await Promise.all(parts.map(({ file }) => unlink(file).catch(() => undefined)));
  return parts.length;
}
