/**
 * A tool's environment: an allow-list, never the worker's whole environment, which holds provider
 * keys, codec keys and whatever else the worker was started with.
 */
import type { SandboxProfile } from './profile';

/** What a sandboxed process gets from the worker's environment without anyone asking. */
export const BASE_ENV_NAMES = ['PATH', 'LANG', 'LANGUAGE', 'LC_ALL', 'LC_CTYPE', 'LC_MESSAGES', 'LC_COLLATE', 'LC_NUMERIC', 'LC_TIME', 'TERM', 'TZ', 'NO_COLOR', 'COLORTERM'];

/** An empty, private home inside the sandbox (a tmpfs), so no dotfile of the worker's user is read. */
export const SANDBOX_HOME = '/home/cadre';

/** Names that hold secrets by convention: dropped when tools run unsandboxed and inherit the rest. */
const SECRET_NAME = /(^|_)(API_?KEY|KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|PAT|AUTH)(_|$)|^AWS_|^GOOGLE_APPLICATION_CREDENTIALS$|^CADRE_CODEC_KEY|^PGPASSWORD$|^DATABASE_URL$|^CADRE_DATABASE_URL$/i;

/** The worker's secrets: variables configured as secret and the values they hold. */
export interface WorkerSecrets {
  names: ReadonlySet<string>;
  values: readonly string[];
}

export const NO_SECRETS: WorkerSecrets = { names: new Set(), values: [] };

export interface EnvironmentRequest {
  profile: SandboxProfile;
  secrets: WorkerSecrets;
  /** Set by cadre or the call itself (CADRE_STEP, a shell step's `env`): never read from the worker. */
  extra: Record<string, string>;
  workerEnv?: NodeJS.ProcessEnv;
}

/** A profile that names a secret to pass on: refused, whoever wrote it. */
export class SecretInProfile extends Error {
  constructor(readonly variable: string) {
    super(`sandbox.env names ${variable}, which this worker holds as a secret: secrets never reach tools (pass what the tool needs another way)`);
    this.name = 'SecretInProfile';
  }
}

export function toolEnvironment({ profile, secrets, extra, workerEnv = process.env }: EnvironmentRequest): Record<string, string> {
  const named = profile.env.find((name) => secrets.names.has(name));
  if (named) throw new SecretInProfile(named);
  const env: Record<string, string> = {};
  const take = (name: string) => {
    const value = workerEnv[name];
    if (value !== undefined && !holdsSecret(value, secrets)) env[name] = value;
  };
  if (profile.mode === 'none') {
    for (const name of Object.keys(workerEnv)) if (!secrets.names.has(name) && !SECRET_NAME.test(name)) take(name);
  } else {
    for (const name of [...BASE_ENV_NAMES, ...profile.env]) take(name);
    Object.assign(env, { HOME: SANDBOX_HOME, TMPDIR: '/tmp', USER: 'cadre', LOGNAME: 'cadre', SHELL: '/bin/sh' });
  }
  for (const name of profile.env) take(name);
  return { ...env, ...extra };
}

function holdsSecret(value: string, secrets: WorkerSecrets): boolean {
  return secrets.values.some((secret) => secret.length > 0 && value.includes(secret));
}
