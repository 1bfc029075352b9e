/**
 * Where and how cadre reaches Temporal, one answer for the CLI, the worker and `CadreClient`:
 * Temporal's own environment configuration (`@temporalio/envconfig`: the `temporal` CLI's config
 * file and its profiles, TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*,
 * TEMPORAL_PROFILE), with the CLI's --address/--namespace/--profile over it as the `temporal` CLI
 * does; without an address from any of them, the `cadre dev` server of this directory, else
 * 127.0.0.1:7233.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TLSConfig } from '@temporalio/client';
import { type ClientConfigProfile, loadClientConfigProfile, toClientOptions } from '@temporalio/envconfig';
import { CadreError } from '../errors/cadre-error';

export interface ConnectOptions {
  /** The server; given here, only the TLS, API key and metadata given here apply (not a profile's). */
  address?: string;
  /** Web UI base URL, for run links (known when cadre started the server). */
  uiUrl?: string;
  namespace?: string;
  /** A profile of the Temporal config file (default: TEMPORAL_PROFILE, else "default"). */
  profile?: string;
  tls?: TLSConfig | boolean;
  apiKey?: string;
  metadata?: Record<string, string>;
  /** Where `cadre dev` left `.cadre/server.json` (default: the current directory). */
  projectDir?: string;
}

/** The server, and what a connection to it needs. */
export interface ServerInfo {
  address: string;
  namespace: string;
  uiUrl?: string;
  pid?: number;
  tls?: TLSConfig | boolean;
  apiKey?: string;
  metadata?: Record<string, string>;
  /** Where the address came from, for messages: "--address", "profile prod", "cadre dev", ... */
  source?: string;
}

export const SERVER_INFO_FILE = path.join('.cadre', 'server.json');

/** The CLI's --address, --namespace and --profile: over the environment and the config file, as in the `temporal` CLI. */
export interface ConnectionFlags {
  address?: string;
  namespace?: string;
  profile?: string;
}

let cliFlags: ConnectionFlags = {};

export function setConnectionFlags(flags: ConnectionFlags): void {
  cliFlags = { ...flags };
}

export function resolveConnection(options: ConnectOptions = {}, env: NodeJS.ProcessEnv = process.env): ServerInfo {
  const explicit = (options.uiUrl && { uiUrl: options.uiUrl }) || {};
  if (options.address) {
    const { tls, apiKey, metadata } = options;
    return { address: options.address, namespace: options.namespace || 'default', ...explicit, ...defined({ tls, apiKey, metadata }), source: 'the caller' };
  }
  const profileName = options.profile ?? cliFlags.profile;
  const profile = loadProfile(profileName, env);
  const address = cliFlags.address || profile.address;
  const namespace = options.namespace || cliFlags.namespace || profile.namespace;
  if (!address) {
    const dev = readServerInfo(options.projectDir ?? process.cwd());
    if (dev) return { ...dev, namespace: namespace ?? dev.namespace, source: 'cadre dev' };
    return { address: '127.0.0.1:7233', namespace: namespace ?? 'default', source: 'the default' };
  }
  const { connectionOptions } = toClientOptions({ ...profile, address });
  const { apiKey } = connectionOptions;
  const tls = connectionOptions.tls ?? undefined;
  const metadata = profile.grpcMeta;
  const source = cliFlags.address ? '--address' : env.TEMPORAL_ADDRESS ? 'TEMPORAL_ADDRESS' : `profile ${profileName ?? env.TEMPORAL_PROFILE ?? 'default'}`;
  return { address, namespace: namespace ?? 'default', ...explicit, ...defined({ tls, apiKey, metadata }), source };
}

function loadProfile(profile: string | undefined, env: NodeJS.ProcessEnv): ClientConfigProfile {
  try {
    return loadClientConfigProfile({ ...(profile && { profile }), overrideEnvVars: env as Record<string, string> });
  } catch (err) {
    const file = env.TEMPORAL_CONFIG_FILE ? ` (${env.TEMPORAL_CONFIG_FILE})` : '';
    throw new CadreError(`Temporal client configuration${file}: ${(err as Error).message}`);
  }
}

function defined<T extends Record<string, unknown>>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as Partial<T>;
}

export function readServerInfo(dir: string): ServerInfo | undefined {
  try {
    const info = JSON.parse(readFileSync(path.join(dir, SERVER_INFO_FILE), 'utf8')) as ServerInfo;
    if (info.pid !== undefined) process.kill(info.pid, 0); // throws when `cadre dev` is gone
    return info;
  } catch {
    return undefined;
  }
}

/** Tells clients in `dir` of the `cadre dev` server there (readServerInfo reads it back while `pid` lives). */
export function writeServerInfo(dir: string, server: Pick<ServerInfo, 'address' | 'namespace' | 'uiUrl'>, pid = process.pid): void {
  const infoFile = path.join(dir, SERVER_INFO_FILE);
  mkdirSync(path.dirname(infoFile), { recursive: true });
  const { address, namespace, uiUrl } = server;
  writeFileSync(infoFile, JSON.stringify({ address, namespace, uiUrl, pid }, null, 2));
}

export function removeServerInfo(dir: string): void {
  rmSync(path.join(dir, SERVER_INFO_FILE), { force: true });
}

/** The options a connection (client or worker) takes from a resolved server. */
export function connectionOptions(server: ServerInfo): { address: string; tls?: TLSConfig | boolean; apiKey?: string; metadata?: Record<string, string> } {
  const { address, tls, apiKey, metadata } = server;
  return { address, ...defined({ tls, apiKey, metadata }) };
}
