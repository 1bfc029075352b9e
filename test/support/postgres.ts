/**
 * A throw-away PostgreSQL server for tests: `initdb` into a temporary directory, `postgres` on a
 * free port of 127.0.0.1, one password-protected superuser. Uses the server binaries on PATH or
 * Debian's /usr/lib/postgresql/<version>/bin (`.ci/run` installs Debian's `postgresql` package).
 * PostgreSQL refuses to run as root: as root, the server runs as the `postgres` system user.
 *
 *   const pg = await startPostgres();
 *   const url = await pg.createDatabase('analytics');   // postgres://cadre:...@127.0.0.1:port/analytics
 *   await pg.stop();
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, type QueryResultRow } from 'pg';
import { freePort } from '../../src/worker/ports';
import { ownedProcess } from './owned-process';

export interface Postgres {
  host: string;
  port: number;
  /** A superuser (it may create databases and roles). */
  user: string;
  password: string;
  /** `postgres://user:password@host:port/postgres`. */
  url: string;
  /** The URL of another database on this server (it need not exist yet). */
  urlFor(database: string): string;
  /** Creates a database (owned by `user`) and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** One query on `database` (default `postgres`) over a connection of its own. */
  query<R extends QueryResultRow = QueryResultRow>(sql: string, values?: unknown[], database?: string): Promise<R[]>;
  /** The server's log so far. */
  log(): string;
  /** Stops the server (fast shutdown) and deletes its files. */
  stop(): Promise<void>;
}

export interface PostgresOptions {
  user?: string;
  password?: string;
  /** Milliseconds to wait for the server to accept connections (default 60 s). */
  timeoutMs?: number;
}

/** The directory holding `initdb` and `postgres`, or undefined when PostgreSQL is not installed. */
export function findPostgresBin(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'postgres'))) return dir;
  }
  const debian = '/usr/lib/postgresql';
  if (!existsSync(debian)) return undefined;
  const versions = readdirSync(debian)
    .filter((v) => existsSync(path.join(debian, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length > 0 ? path.join(debian, versions[0], 'bin') : undefined;
}

/** uid and gid of the `postgres` system user, when this process is root (PostgreSQL refuses root). */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('running as root, and there is no `postgres` user to run PostgreSQL as (PostgreSQL refuses root)');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export async function startPostgres(options: PostgresOptions = {}): Promise<Postgres> {
  const bin = findPostgresBin();
  if (!bin) throw new Error('PostgreSQL is not installed (no initdb/postgres on PATH or in /usr/lib/postgresql/*/bin): apt-get install postgresql');
  const user = options.user ?? 'cadre';
  const password = options.password ?? `pw-${Math.random().toString(36).slice(2)}`;
  const host = '127.0.0.1';
  const as = serverUser();
  const root = mkdtempSync(path.join(os.tmpdir(), 'cadre-pg-'));
  const dataDir = path.join(root, 'data');
  const pwFile = path.join(root, 'pwfile');
  writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
  if (as) {
    chownSync(root, as.uid, as.gid);
    chownSync(pwFile, as.uid, as.gid);
  }
  const spawnAs = as ? { uid: as.uid, gid: as.gid } : {};
  const env = { ...process.env, LC_ALL: 'C', LANG: 'C' };

  const init = spawnSync(
    path.join(bin, 'initdb'),
    ['-D', dataDir, '-U', user, `--pwfile=${pwFile}`, '--auth=scram-sha-256', '--encoding=UTF8', '--no-locale', '--no-sync'],
    { ...spawnAs, env, cwd: root, encoding: 'utf8' },
  );
  if (init.status !== 0) {
    rmSync(root, { recursive: true, force: true });
    throw new Error(`initdb failed (${init.error?.message ?? `exit ${init.status}`}):\n${init.stderr}`);
  }

  const port = await freePort();
  // Durability off: a test database that dies with its test.
  const child: ChildProcess = spawn(
    path.join(bin, 'postgres'),
    ['-D', dataDir, '-p', String(port), '-h', host, '-k', root, '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off', '-c', 'max_connections=200'],
    { ...spawnAs, env, cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let log = '';
  child.stdout!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (log += chunk.toString()));
  child.once('error', (err) => (log += `\n${err.message}`));

  const urlFor = (database: string) => `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${host}:${port}/${encodeURIComponent(database)}`;
  const query = async <R extends QueryResultRow>(sql: string, values: unknown[] = [], database = 'postgres'): Promise<R[]> => {
    const client = new Client({ host, port, user, password, database });
    await client.connect();
    try {
      return (await client.query<R>(sql, values)).rows;
    } finally {
      await client.end();
    }
  };

  // SIGINT: PostgreSQL's fast shutdown, which ends sessions instead of waiting for clients.
  const stop = ownedProcess(child, root, 'SIGINT', 10_000);

  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    try {
      await query('SELECT 1');
      break;
    } catch (err) {
      if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
        await stop();
        throw new Error(`PostgreSQL did not start on ${host}:${port}: ${(err as Error).message}\n${log.slice(-4000)}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  return {
    host,
    port,
    user,
    password,
    url: urlFor('postgres'),
    urlFor,
    async createDatabase(name: string) {
      await query(`CREATE DATABASE ${quoteIdent(name)} OWNER ${quoteIdent(user)}`);
      return urlFor(name);
    },
    query,
    log: () => log,
    stop,
  };
}
