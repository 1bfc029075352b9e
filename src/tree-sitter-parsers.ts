/**
 * tree-sitter parsers (WebAssembly grammars from npm), each loaded once per process: loading a
 * grammar costs hundreds of milliseconds, parsing is synchronous after. The shell's command rules
 * and preflight read bash with one; the syntax check before a file changes reads Python with another.
 */
import { readFile } from 'node:fs/promises';
import { Language, Parser } from 'web-tree-sitter';

const loaded = new Map<string, Promise<Parser>>();

/** The parser of the grammar at `wasm` (a module path, e.g. `tree-sitter-bash/tree-sitter-bash.wasm`). */
export function treeSitterParser(wasm: string): Promise<Parser> {
  let ready = loaded.get(wasm);
  if (!ready) {
    ready = (async () => {
      await Parser.init();
      // Read here, not by Language.load(path): its dynamic import() of fs fails under jest's CommonJS vm.
      const language = await Language.load(await readFile(require.resolve(wasm)));
      const parser = new Parser();
      parser.setLanguage(language);
      return parser;
    })();
    // A failed load (a missing file) is not kept: the next call tries again.
    ready.catch(() => loaded.delete(wasm));
    loaded.set(wasm, ready);
  }
  return ready;
}
