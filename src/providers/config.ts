/**
 * Model configuration: the `models` section of cadre.config.yaml plus environment variables.
 * API keys come only from the environment and only here (inside activities); nothing returned
 * by this module's callers to a workflow may carry them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ErrorTypes, permanent } from '../errors/application-failures';

export const PROVIDERS = ['openai', 'anthropic', 'openai-compatible', 'scripted'] as const;
/** How an endpoint's model calls tools (tool-call-modes.ts, which loads the parser only where models are called). */
export const TOOL_CALL_MODES = ['native', 'json', 'xml', 'qwen'] as const;
export type ToolCallMode = (typeof TOOL_CALL_MODES)[number];
export type ProviderName = (typeof PROVIDERS)[number];

export interface ModelId {
  provider: ProviderName;
  /** The provider's model name; for `openai-compatible` the endpoint's name then `/model` (or the endpoint's default model); for `scripted` the scenario file. */
  name: string;
}

const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' });
// Names of environment variables, never the keys themselves: config files get committed.
const envName = z.string().regex(/^[A-Z_][A-Z0-9_]*$/, 'must be the name of an environment variable, e.g. MY_API_KEY');
const noKeys = { apiKey: z.never({ error: 'keys do not go in config files: name an environment variable with apiKeyEnv' }).optional() };

const endpointSchema = z.strictObject({ baseURL: httpUrl.optional(), apiKeyEnv: envName.optional(), ...noKeys });
const compatibleSchema = z.strictObject({
  baseURL: httpUrl,
  apiKeyEnv: envName.optional(),
  model: z.string().min(1).optional(),
  /** How the endpoint's model calls tools: its server's own tool calls, or calls written as text (tool-call-modes.ts). */
  toolCalls: z.enum(TOOL_CALL_MODES).default('native'),
  ...noKeys,
});

const modelsSectionSchema = z.strictObject({
  /** The model used when a request names none; CADRE_MODEL overrides it. */
  default: z.string().optional(),
  openai: endpointSchema.optional(),
  anthropic: endpointSchema.optional(),
  compatible: z.record(z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'must be lowercase letters, digits, - or _'), compatibleSchema).optional(),
});

/** The section as written (defaults not yet filled in); parsing fills them. */
export type ModelsSection = z.input<typeof modelsSectionSchema>;

interface Endpoint {
  baseURL?: string;
  apiKey?: string;
}

/** Everything needed to build a model client, keys included. Lives in the activity worker only. */
export interface ModelSettings {
  defaultModel?: string;
  openai: Endpoint;
  anthropic: Endpoint;
  compatible: Record<string, Endpoint & { baseURL: string; model?: string; toolCalls: ToolCallMode }>;
  /** Every key read, so failures can be scrubbed of them. */
  secrets: string[];
}

export type Env = Record<string, string | undefined>;

/** Parses the `models` section of a cadre.config.yaml text; errors name the path (`models.openai.baseURL`). */
export function parseModelsSection(yamlText: string, source = 'cadre.config.yaml'): ModelsSection {
  let doc: unknown;
  try {
    doc = parseYaml(yamlText);
  } catch (err) {
    throw permanent(ErrorTypes.ModelConfigInvalid, `${source}: not valid YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  const section = doc && typeof doc === 'object' ? (doc as Record<string, unknown>).models : undefined;
  const parsed = modelsSectionSchema.safeParse(section ?? {});
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => `${['models', ...issue.path].join('.')}: ${issue.message}`);
    throw permanent(ErrorTypes.ModelConfigInvalid, `${source}: ${issues.join('; ')}`);
  }
  return parsed.data;
}

/** Joins a parsed section with the environment: keys, base URL and CADRE_MODEL. */
export function modelSettings(section: ModelsSection = {}, env: Env = process.env): ModelSettings {
  const key = (name: string | undefined, fallback: string): string | undefined => nonEmpty(env[name ?? fallback]);
  const openai = { baseURL: envUrl(env, 'OPENAI_BASE_URL') ?? section.openai?.baseURL, apiKey: key(section.openai?.apiKeyEnv, 'OPENAI_API_KEY') };
  const anthropic = { baseURL: section.anthropic?.baseURL, apiKey: key(section.anthropic?.apiKeyEnv, 'ANTHROPIC_API_KEY') };
  const compatible = Object.fromEntries(
    Object.entries(section.compatible ?? {}).map(([name, c]) => [name, { baseURL: c.baseURL, model: c.model, toolCalls: c.toolCalls ?? 'native', apiKey: c.apiKeyEnv ? nonEmpty(env[c.apiKeyEnv]) : undefined }]),
  );
  const secrets = [openai.apiKey, anthropic.apiKey, ...Object.values(compatible).map((c) => c.apiKey)].filter((k): k is string => !!k);
  const defaultModel = nonEmpty(env.CADRE_MODEL) ?? section.default;
  if (defaultModel !== undefined) parseModelId(defaultModel, env.CADRE_MODEL ? 'CADRE_MODEL' : 'models.default');
  return { defaultModel, openai, anthropic, compatible, secrets };
}

/** The settings with one endpoint's `toolCalls` replaced: to try a model in each mode (`cadre models test`). */
export function withToolCalls(settings: ModelSettings, endpoint: string, toolCalls: ToolCallMode): ModelSettings {
  const current = settings.compatible[endpoint];
  if (!current) throw permanent(ErrorTypes.ModelConfigInvalid, `no endpoint "${endpoint}" under models.compatible in cadre.config.yaml`);
  return { ...settings, compatible: { ...settings.compatible, [endpoint]: { ...current, toolCalls } } };
}

/** `provider:model`, e.g. `openai:gpt-4o-mini`, `openai-compatible:local/llama3`, `scripted:./scenario.yaml`. */
export function parseModelId(id: string, where = 'model'): ModelId {
  const colon = id.indexOf(':');
  const provider = colon < 0 ? '' : id.slice(0, colon);
  const name = colon < 0 ? '' : id.slice(colon + 1).trim();
  if (!(PROVIDERS as readonly string[]).includes(provider) || !name) {
    throw permanent(
      ErrorTypes.ModelConfigInvalid,
      `${where}: "${clip(id)}" is not provider:model, with provider one of ${PROVIDERS.join(', ')} (e.g. openai:gpt-4o-mini)`,
    );
  }
  return { provider: provider as ProviderName, name };
}

function envUrl(env: Env, name: string): string | undefined {
  const value = nonEmpty(env[name]);
  if (value !== undefined && !httpUrl.safeParse(value).success) throw permanent(ErrorTypes.ModelConfigInvalid, `${name}: "${clip(value)}" must be an http(s) URL`);
  return value;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value && value.trim() ? value.trim() : undefined;
}

function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 80)}...` : text;
}

/** Settings from a cadre.config.yaml file (none is fine: environment only) and the environment. */
export function loadModelSettings(configPath: string | undefined, env: Env = process.env): ModelSettings {
  if (!configPath || !existsSync(configPath)) return modelSettings({}, env);
  return modelSettings(parseModelsSection(readFileSync(configPath, 'utf8'), configPath), env);
}
