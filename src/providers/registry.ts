/**
 * Builds an AI SDK LanguageModel for a `provider:model` id from the settings (keys included).
 * Clients are built per call: they are cheap, and settings may differ between calls in tests.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { ErrorTypes, permanent } from '../errors/application-failures';
import type { ModelId, ModelSettings } from './config';
import { ScriptedModel, loadScenario } from './scripted';
import { type ToolCallMode, withToolCallMode } from './tool-call-modes';

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
      // `<endpoint>/<model>` or `<endpoint>` alone when the endpoint names its model.
      const slash = id.name.indexOf('/');
      const endpointName = slash < 0 ? id.name : id.name.slice(0, slash);
      const endpoint = settings.compatible[endpointName];
      if (!endpoint) {
        const known = Object.keys(settings.compatible);
        throw permanent(ErrorTypes.ModelConfigInvalid, `openai-compatible:${id.name}: no endpoint "${endpointName}" under models.compatible in cadre.config.yaml (known: ${known.join(', ') || 'none'})`);
      }
      const model = slash < 0 ? endpoint.model : id.name.slice(slash + 1);
      if (!model) throw permanent(ErrorTypes.ModelConfigInvalid, `openai-compatible:${id.name}: name the model (openai-compatible:${endpointName}/<model>) or set models.compatible.${endpointName}.model`);
      // includeUsage: a streamed answer reports its tokens only when asked.
      const client = createOpenAICompatible({ name: endpointName, baseURL: endpoint.baseURL, apiKey: endpoint.apiKey, includeUsage: true })(model);
      return withToolCallMode(client, endpoint.toolCalls);
    }
    case 'scripted':
      return new ScriptedModel(loadScenario(id.name), id.name);
  }
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
