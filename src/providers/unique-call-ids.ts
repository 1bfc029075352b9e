/**
 * Each tool call of a turn with an id of its own, before the AI SDK reads the turn: a model that
 * repeats an id (small models do) would otherwise have its calls merged by id (the second ran with
 * the first's arguments), and providers pair results to calls by id, so one call was lost.
 */
import type { LanguageModelV3, LanguageModelV3Middleware } from '@ai-sdk/provider';
import { wrapLanguageModel } from 'ai';

const uniqueCallIds: LanguageModelV3Middleware = {
  specificationVersion: 'v3',
  wrapGenerate: async ({ doGenerate }) => {
    const result = await doGenerate();
    const seen = new Set<string>();
    const content = result.content.map((part) => {
      if (part.type !== 'tool-call') return part;
      const base = part.toolCallId || 'call';
      let id = base;
      for (let n = 2; seen.has(id); n++) id = `${base}-${n}`;
      seen.add(id);
      return id === part.toolCallId ? part : { ...part, toolCallId: id };
    });
    return { ...result, content };
  },
};

export function withUniqueCallIds(model: LanguageModelV3): LanguageModelV3 {
  return wrapLanguageModel({ model, middleware: uniqueCallIds });
}
