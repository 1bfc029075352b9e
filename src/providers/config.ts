/**
 * Model configuration: the `models` section of cadre.config.yaml plus environment variables.
 * API keys come only from the environment and only here (inside activities); nothing returned
 * by this module's callers to a workflow may carry them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ErrorTypes, permanent } from '../errors/application-failures';
import { type PriceTable, type Pricing, pricesSchema } from './prices';

export const PROVIDERS = ['openai', 'anthropic', 'openai-compatible', 'scripted'] as const;
/**
 * How an endpoint's model calls tools (tool-call-modes.ts, which loads the parser only where models
 * are called). `required` first: `cadre models test` tries the modes in this order.
 */
export const TOOL_CALL_MODES = ['required', 'native', 'json', 'xml', 'qwen'] as const;
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

/** Sampling an endpoint's requests carry; a step's own `maxOutputTokens` wins over the endpoint's. */
const samplingFields = {
  temperature: z.number().min(0).max(2).optional(),
  topP: z.number().gt(0).max(1).optional(),
  topK: z.int().min(1).max(1000).optional(),
  maxOutputTokens: z.int().min(16).max(1_000_000).optional(),
};
export type Sampling = { [K in keyof typeof samplingFields]?: number };

const endpointSchema = z.strictObject({ baseURL: httpUrl.optional(), apiKeyEnv: envName.optional(), ...noKeys });
const compatibleSchema = z.strictObject({
  baseURL: httpUrl,
  apiKeyEnv: envName.optional(),
  model: z.string().min(1).optional(),
  /** How the endpoint's model calls tools (tool-call-modes.ts); unset, `required` on this machine, `native` elsewhere (defaultToolCalls). */
  toolCalls: z.enum(TOOL_CALL_MODES).optional(),
  ...samplingFields,
  /** The tokens the server's context holds; unset, cadre asks the server (llama.cpp's /props, Ollama's /api/show). */
  contextTokens: z.int().min(256).max(10_000_000).optional(),
  ...noKeys,
});

const modelsSectionSchema = z.strictObject({
  /** The model used when a request names none; CADRE_MODEL overrides it. */
  default: z.string().optional(),
  openai: endpointSchema.optional(),
  anthropic: endpointSchema.optional(),
  compatible: z.record(z.string().regex(/^[a-z0-9][a-z0-9_-]*$/, 'must be lowercase letters, digits, - or _'), compatibleSchema).optional(),
  /** What models cost, USD per million tokens (prices.ts). */
  prices: pricesSchema.optional(),
});

/** The section as written (defaults not yet filled in); parsing fills them. */
export type ModelsSection = z.input<typeof modelsSectionSchema>;

interface Endpoint {
  baseURL?: string;
  apiKey?: string;
}

export interface CompatibleEndpoint extends Endpoint {
  baseURL: string;
  model?: string;
  toolCalls: ToolCallMode;
  sampling: Sampling;
  contextTokens?: number;
}

/** Everything needed to build a model client, keys included. Lives in the activity worker only. */
export interface ModelSettings {
  defaultModel?: string;
  openai: Endpoint;
  anthropic: Endpoint;
  compatible: Record<string, CompatibleEndpoint>;
  /** Every key read, so failures can be scrubbed of them. */
  secrets: string[];
  /** What models cost (`models.prices`): costs of turns, and the caps of cost budgets. */
  prices: PriceTable;
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
    Object.entries(section.compatible ?? {}).map(([name, c]): [string, CompatibleEndpoint] => [
      name,
      {
        baseURL: c.baseURL,
        model: c.model,
        toolCalls: c.toolCalls ?? defaultToolCalls(c.baseURL),
        sampling: localSampling(c),
        ...(c.contextTokens !== undefined && { contextTokens: c.contextTokens }),
        apiKey: c.apiKeyEnv ? nonEmpty(env[c.apiKeyEnv]) : undefined,
      },
    ]),
  );
  const secrets = [openai.apiKey, anthropic.apiKey, ...Object.values(compatible).map((c) => c.apiKey)].filter((k): k is string => !!k);
  const defaultModel = nonEmpty(env.CADRE_MODEL) ?? section.default;
  if (defaultModel !== undefined) parseModelId(defaultModel, env.CADRE_MODEL ? 'CADRE_MODEL' : 'models.default');
  return { defaultModel, openai, anthropic, compatible, secrets, prices: section.prices ?? {} };
}

/**
 * An endpoint's mode when it names none. A server on this machine (localhost, 127.0.0.0/8, ::1) is
 * a local model, most likely a small one: `required` let Qwen2.5-Coder 1.5B finish 6 of 10
 * benchmark tasks where `native` finished none (docs/local-models.md). Any other endpoint (a hosted
 * OpenAI-compatible API, a GPU box) keeps `native`: its server parses the calls, and may not take
 * a response_format beside tools.
 */
export function defaultToolCalls(baseURL: string): ToolCallMode {
  const host = new URL(baseURL).hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host) ? 'required' : 'native';
}

/**
 * An endpoint's sampling: what it sets, else greedy (temperature 0). A small local model's tool
 * calls and edits come out right far more often greedy (npm run bench:local-model, docs/local-models.md).
 */
function localSampling(c: Sampling): Sampling {
  const set = Object.fromEntries(Object.entries({ temperature: c.temperature, topP: c.topP, topK: c.topK, maxOutputTokens: c.maxOutputTokens }).filter(([, v]) => v !== undefined));
  return { temperature: 0, ...set };
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
/** The config file's price table (`models.prices`, empty without one) and the model of requests that name none. */
export function loadPricing(configPath: string | undefined, env: Env = process.env): Pricing {
  const section = configPath && existsSync(configPath) ? parseModelsSection(readFileSync(configPath, 'utf8'), configPath) : {};
  const defaultModel = nonEmpty(env.CADRE_MODEL) ?? section.default;
  return { prices: section.prices ?? {}, ...(defaultModel && { defaultModel }) };
}

export function loadModelSettings(configPath: string | undefined, env: Env = process.env): ModelSettings {
  if (!configPath || !existsSync(configPath)) return modelSettings({}, env);
  return modelSettings(parseModelsSection(readFileSync(configPath, 'utf8'), configPath), env);
}
