/**
 * Each tool call of a turn with an id of its own, before the AI SDK reads the turn: a model that
 * repeats an id (small models do) would otherwise have its calls merged by id (the second ran with
 * the first's arguments), and providers pair results to calls by id, so one call was lost.
 */
import type { LanguageModelV3, LanguageModelV3Middleware, LanguageModelV3StreamPart } from '@ai-sdk/provider';
import { wrapLanguageModel } from 'ai';

const uniqueCallIds: LanguageModelV3Middleware = {
  specificationVersion: 'v3',
  wrapGenerate: async ({ doGenerate }) => {
    const result = await doGenerate();
    const unique = renamer();
    return { ...result, content: result.content.map((part) => (part.type === 'tool-call' ? unique(part) : part)) };
  },
  wrapStream: async ({ doStream }) => {
    const result = await doStream();
    const unique = renamer();
    // A streamed call comes as tool-input-start, deltas and end (by `id`), then tool-call (by
    // `toolCallId`): each start takes a unique id, and the parts after it, and its call, follow it.
    const started = new Map<string, string[]>();
    const latest = new Map<string, string>();
    const stream = result.stream.pipeThrough(
      new TransformStream<LanguageModelV3StreamPart, LanguageModelV3StreamPart>({
        transform: (part, controller) => {
          if (part.type === 'tool-input-start') {
            const id = unique({ toolCallId: part.id }).toolCallId;
            started.set(part.id, [...(started.get(part.id) ?? []), id]);
            latest.set(part.id, id);
            return controller.enqueue({ ...part, id });
          }
          if (part.type === 'tool-input-delta' || part.type === 'tool-input-end') return controller.enqueue({ ...part, id: latest.get(part.id) ?? part.id });
          if (part.type !== 'tool-call') return controller.enqueue(part);
          const id = started.get(part.toolCallId)?.shift();
          controller.enqueue(id !== undefined ? { ...part, toolCallId: id } : unique(part));
        },
      }),
    );
    return { ...result, stream };
  },
};

/** Gives each tool call of one turn an id no earlier call of the turn has. */
function renamer() {
  const seen = new Set<string>();
  return <P extends { toolCallId: string }>(part: P): P => {
    const base = part.toolCallId || 'call';
    let id = base;
    for (let n = 2; seen.has(id); n++) id = `${base}-${n}`;
    seen.add(id);
    return id === part.toolCallId ? part : { ...part, toolCallId: id };
  };
}

export function withUniqueCallIds(model: LanguageModelV3): LanguageModelV3 {
  return wrapLanguageModel({ model, middleware: uniqueCallIds });
}
