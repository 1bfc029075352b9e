/**
 * The worker's side of containment, read once on first use: its sandbox profile (cadre.config.yaml
 * `sandbox:`, CADRE_SANDBOX) and its secrets (provider keys, codec keys, the Temporal API key,
 * `secrets.env`, MCP header variables), which no tool's environment gets and every tool's output
 * is scrubbed of.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { DEFAULT_PROFILE, type SandboxProfile, effectiveProfile } from '../sandbox/profile';
import { sandboxSchema, toSandboxSpec } from '../sandbox/schema';
import type { WorkerSecrets } from '../sandbox/environment';
import type { EgressLookup } from '../egress';
import { Redactor } from '../secrets/redact';
import { bubblewrapAvailability } from '../sandbox/bubblewrap';
import { ErrorTypes, permanent } from '../errors/application-failures';

export interface SandboxDeps {
  /** The worker's profile instead of the config file's (tests, embedding). */
  sandbox?: SandboxProfile;
  /** More variables holding secrets, besides the config file's and the known ones. */
  secretEnv?: string[];
  /** How egress resolves host names instead of the system's resolver (tests: names that lead to loopback). */
  egressLookup?: EgressLookup;
}

export interface WorkerContainment {
  profile: SandboxProfile;
  secrets: WorkerSecrets;
  redactor: Redactor;
}

/** Variables that hold secrets wherever cadre runs. */
const KNOWN_SECRET_ENV = ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY', 'CADRE_CODEC_KEYS', 'CADRE_CODEC_TOKEN', 'TEMPORAL_API_KEY', 'CADRE_DATABASE_URL', 'PGPASSWORD'];

const sectionsSchema = z.object({
  sandbox: sandboxSchema.optional(),
  secrets: z.strictObject({ env: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be the name of an environment variable')).max(256).optional() }).optional(),
  models: z.unknown().optional(),
  mcp: z.unknown().optional(),
});

/**
 * Reads the config once; `extraSecrets` gives values known only elsewhere (model settings' keys).
 * A bad section fails every tool call with its path until the worker restarts with a good one.
 */
export function lazyContainment(configFile: () => string, deps: SandboxDeps, extraSecrets: () => string[]): () => WorkerContainment {
  let settings: WorkerContainment | undefined;
  return () => (settings ??= readContainment(configFile(), deps, extraSecrets()));
}

function readContainment(file: string, deps: SandboxDeps, extraSecrets: string[], env: NodeJS.ProcessEnv = process.env): WorkerContainment {
  const doc = existsSync(file) ? readDoc(file) : {};
  const parsed = sectionsSchema.safeParse(doc ?? {});
  if (!parsed.success) {
    throw permanent(ErrorTypes.SandboxConfigInvalid, `${file}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  let profile = deps.sandbox ?? effectiveProfile(DEFAULT_PROFILE, parsed.data.sandbox === undefined ? undefined : toSandboxSpec(parsed.data.sandbox));
  const forced = env.CADRE_SANDBOX?.trim();
  if (forced === 'none' || forced === 'bubblewrap') profile = { ...profile, mode: forced };
  else if (forced) throw permanent(ErrorTypes.SandboxConfigInvalid, `CADRE_SANDBOX=${forced}: use bubblewrap or none`);
  const names = new Set([...KNOWN_SECRET_ENV, ...configuredKeyNames(doc), ...(parsed.data.secrets?.env ?? []), ...(deps.secretEnv ?? [])]);
  const values = [...names].map((name) => env[name]?.trim()).filter((v): v is string => !!v);
  const secrets: WorkerSecrets = { names, values: [...new Set([...values, ...extraSecrets])] };
  return { profile, secrets, redactor: new Redactor(secrets.values) };
}

/**
 * What a person starting a worker should hear about its sandbox: that it is off (`sandbox: none`),
 * or that bubblewrap cannot run here (every command a tool starts would fail); undefined when all is well.
 */
export function workerSandboxWarning(file = process.env.CADRE_CONFIG ?? 'cadre.config.yaml'): string | undefined {
  let profile: SandboxProfile;
  try {
    profile = readContainment(file, {}, []).profile;
  } catch (err) {
    return (err as Error).message;
  }
  if (profile.mode === 'none') return `sandbox: none (${process.env.CADRE_SANDBOX === 'none' ? 'CADRE_SANDBOX' : file}): tools run unconfined, with this worker's permissions, files and network (docs/security.md)`;
  const available = bubblewrapAvailability();
  return available.ok ? undefined : `${available.reason}; until then every command a tool starts fails`;
}

function readDoc(file: string): unknown {
  try {
    return parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw permanent(ErrorTypes.SandboxConfigInvalid, `${file}: not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
}

/** Every `apiKeyEnv` of the models section and every `headersFromEnv` variable of the MCP servers. */
function configuredKeyNames(doc: unknown): string[] {
  const names: string[] = [];
  const walk = (value: unknown, key?: string) => {
    if (key === 'apiKeyEnv' && typeof value === 'string') names.push(value);
    else if (key === 'headersFromEnv' && value && typeof value === 'object') names.push(...Object.values(value).filter((v): v is string => typeof v === 'string'));
    else if (value && typeof value === 'object') for (const [k, v] of Object.entries(value)) walk(v, k);
  };
  const root = (doc ?? {}) as Record<string, unknown>;
  walk(root.models);
  walk(root.mcp);
  return names;
}
