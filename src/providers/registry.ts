/**
 * Builds an AI SDK LanguageModel for a `provider:model` id from the settings (keys included).
 * Clients are built per call: they are cheap, and settings may differ between calls in tests.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { defaultSettingsMiddleware, wrapLanguageModel } from 'ai';
import { ErrorTypes, permanent } from '../errors/application-failures';
import type { CompatibleEndpoint, ModelId, ModelSettings } from './config';
import { ScriptedModel, loadScenario } from './scripted';
import { type ToolCallMode, requiredBody, withToolCallMode } from './tool-call-modes';

export function languageModel(id: ModelId, settings: ModelSettings): LanguageModelV3 {
  switch (id.provider) {
    case 'openai': {
      const apiKey = requireKey(settings.openai.apiKey, 'OPENAI_API_KEY', id);
      // Chat completions: the wire format every OpenAI-compatible server speaks too.
      return createOpenAI({ apiKey, baseURL: settings.openai.baseURL }).chat(id.name);
    }
    case 'anthropic': {
      const apiKey = requireKey(settings.anthropic.apiKey, 'ANTHROPIC_API_KEY', id);
      return createAnthropic({ apiKey, baseURL: settings.anthropic.baseURL })(id.name);
    }
    case 'openai-compatible': {
      const { name: endpointName, endpoint, model } = compatibleEndpoint(id, settings);
      const { topK, ...sampling } = endpoint.sampling;
      const client = createOpenAICompatible({
        name: endpointName,
        baseURL: endpoint.baseURL,
        apiKey: endpoint.apiKey,
        // A streamed answer reports its tokens only when asked.
        includeUsage: true,
        // Fields OpenAI's format lacks that local servers read: top_k (llama.cpp, vLLM, Ollama), and where
        // a call is required, one a turn (a small model's second guesses the first's result) held to a schema.
        transformRequestBody: (body) => requiredBody({ ...body, ...(topK !== undefined && { top_k: topK }) }),
      })(model);
      return withToolCallMode(wrapLanguageModel({ model: client, middleware: defaultSettingsMiddleware({ settings: sampling }) }), endpoint.toolCalls);
    }
    case 'scripted':
      return new ScriptedModel(loadScenario(id.name), id.name);
  }
}

/** An `openai-compatible` id's endpoint and model: `<endpoint>/<model>`, or `<endpoint>` alone when the endpoint names its model. */
export function compatibleEndpoint(id: ModelId, settings: ModelSettings): { name: string; endpoint: CompatibleEndpoint; model: string } {
  const slash = id.name.indexOf('/');
  const name = slash < 0 ? id.name : id.name.slice(0, slash);
  const endpoint = settings.compatible[name];
  if (!endpoint) {
    const known = Object.keys(settings.compatible);
    throw permanent(ErrorTypes.ModelConfigInvalid, `openai-compatible:${id.name}: no endpoint "${name}" under models.compatible in cadre.config.yaml (known: ${known.join(', ') || 'none'})`);
  }
  const model = slash < 0 ? endpoint.model : id.name.slice(slash + 1);
  if (!model) throw permanent(ErrorTypes.ModelConfigInvalid, `openai-compatible:${id.name}: name the model (openai-compatible:${name}/<model>) or set models.compatible.${name}.model`);
  return { name, endpoint, model };
}

/** How the model calls tools, and the endpoint whose `toolCalls` says so (only `models.compatible` endpoints have one). */
export function toolCallsOf(id: ModelId, settings: ModelSettings): { mode: ToolCallMode; endpoint?: string } {
  if (id.provider !== 'openai-compatible') return { mode: 'native' };
  const endpoint = id.name.split('/')[0];
  return { mode: settings.compatible[endpoint]?.toolCalls ?? 'native', endpoint };
}

function requireKey(key: string | undefined, variable: string, id: ModelId): string {
  if (!key) throw permanent(ErrorTypes.ModelConfigInvalid, `${id.provider}:${id.name}: no API key: set ${variable}`);
  return key;
}
