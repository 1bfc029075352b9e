/**
 * The house stays walkable (docs/architecture.md): no source file over 400 lines, and no folder
 * of src/ (nor room of src/workflows/) holding over a fifth of the code.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const SRC = path.join(__dirname, '..', '..', 'src');
const MAX_FILE_LINES = 400;
const MAX_FOLDER_SHARE = 0.2;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) return sourceFiles(file);
    return name.endsWith('.ts') ? [file] : [];
  });
}

const lines = new Map(sourceFiles(SRC).map((file) => [path.relative(SRC, file), readFileSync(file, 'utf8').split('\n').length - 1]));
const total = [...lines.values()].reduce((a, b) => a + b, 0);

test(`no file in src/ is over ${MAX_FILE_LINES} lines`, () => {
  const long = [...lines].filter(([, n]) => n > MAX_FILE_LINES).map(([file, n]) => `${file}: ${n}`);
  expect(long).toEqual([]);
});

test('no folder of src/, and no room of src/workflows/, holds over a fifth of the code', () => {
  const folders = new Map<string, number>();
  for (const [file, n] of lines) {
    const parts = file.split(path.sep);
    if (parts.length > 1) folders.set(parts[0], (folders.get(parts[0]) ?? 0) + n);
    if (parts[0] === 'workflows' && parts.length > 2) folders.set(`workflows/${parts[1]}`, (folders.get(`workflows/${parts[1]}`) ?? 0) + n);
  }
  const shares = [...folders].map(([folder, n]) => ({ folder, share: Math.round((n / total) * 1000) / 10 }));
  console.log(`src/: ${total} lines; largest folders: ${shares.sort((a, b) => b.share - a.share).slice(0, 4).map((s) => `${s.folder} ${s.share}%`).join(', ')}`);
  expect(shares.filter((s) => s.share > MAX_FOLDER_SHARE * 100)).toEqual([]);
});
