/** What the docs show as code is the code: blocks that quote a source file must match it. */
import { readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.join(__dirname, '..', '..');

/** The fenced blocks of a markdown file, with the language of each. */
function codeBlocks(file: string): { lang: string; code: string }[] {
  const text = readFileSync(path.join(root, file), 'utf8');
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({ lang: m[1], code: m[2] }));
}

test('the step kind guide shows the echo kind as it is in the source', () => {
  const source = readFileSync(path.join(root, 'src/workflows/plan/kinds/echo.ts'), 'utf8');
  const shown = codeBlocks('docs/architecture.md').filter((b) => b.code.includes("kind: 'echo'"));
  expect(shown).toHaveLength(1);
  expect(shown[0]).toEqual({ lang: 'ts', code: source });
});
