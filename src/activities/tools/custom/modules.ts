/**
 * TypeScript (or JavaScript) tool modules: every export made with `defineTool` is a tool. A `.ts`
 * module is loaded through tsx when the worker does not run under a TypeScript loader already.
 */
import { type CadreTool, isCadreTool } from '../../../tools/define';
import { ErrorTypes, permanent } from '../../../errors/application-failures';

export async function loadToolModules(modules: string[]): Promise<Map<string, CadreTool>> {
  const tools = new Map<string, CadreTool>();
  for (const file of modules) {
    let exported: Record<string, unknown>;
    try {
      exported = await importModule(file);
    } catch (err) {
      throw permanent(ErrorTypes.ModelConfigInvalid, `tools.modules: ${file} cannot be loaded: ${(err as Error).message.split('\n')[0]}`);
    }
    const found = Object.values(exported).flatMap((value) => (isCadreTool(value) ? [value] : Array.isArray(value) ? value.filter(isCadreTool) : []));
    if (found.length === 0) throw permanent(ErrorTypes.ModelConfigInvalid, `tools.modules: ${file} exports no tool made with defineTool`);
    for (const tool of found) {
      if (tools.has(tool.name)) throw permanent(ErrorTypes.ModelConfigInvalid, `tools.modules: two tools are named "${tool.name}" (one in ${file})`);
      tools.set(tool.name, tool);
    }
  }
  return tools;
}

/** A variable, not a literal: the package's types need a newer module resolution than cadre's. */
const TSX_REQUIRE_HOOK = 'tsx/cjs';

async function importModule(file: string): Promise<Record<string, unknown>> {
  try {
    // JavaScript, or TypeScript under a loader of the worker's own (tsx, jest's).
    return (await import(file)) as Record<string, unknown>;
  } catch (err) {
    if (!/\.[mc]?ts$/.test(file)) throw err;
  }
  // Plain Node cannot read TypeScript: tsx's require hook, registered once, lets it.
  await import(TSX_REQUIRE_HOOK);
  return (await import(file)) as Record<string, unknown>;
}
