/**
 * `code.search`: literal text in the workspace's files, for what the navigation tools cannot
 * answer (non-TypeScript files, comments, strings). Its answer says when a navigation tool
 * would have been more precise.
 */
import path from 'node:path';
import type { CodeSearchParams } from '../../../plan-format/tools';
import { walkTree } from '../../confined-tree';
import { resolveInside } from '../../confinement';
import { type CodeLocation, type CodeToolContext, SKIPPED_DIRS } from './project';

const MAX_MATCHES = 500;
const MAX_FILE_BYTES = 1024 * 1024;
const TYPESCRIPT = /\.(ts|tsx|mts|cts)$/;

export async function searchCode(params: CodeSearchParams, ctx: CodeToolContext) {
  const dir = params.dir ? (await resolveInside(ctx.boundary, params.dir, 'dir')).path : ctx.boundary.root;
  const needle = params.ignoreCase ? params.text.toLowerCase() : params.text;
  const matches: CodeLocation[] = [];
  let truncated = false as boolean;
  const search = (file: string, text: string) => {
    if (text.includes('\0')) return;
    const lines = text.split('\n');
    for (let i = 0; i < lines.length; i++) {
      const line = params.ignoreCase ? lines[i].toLowerCase() : lines[i];
      const column = line.indexOf(needle);
      if (column < 0) continue;
      if (matches.length === MAX_MATCHES) {
        truncated = true;
        return;
      }
      const snippet = lines[i].trim();
      matches.push({ file: path.relative(ctx.boundary.root, file), line: i + 1, column: column + 1, snippet: snippet.length > 200 ? `${snippet.slice(0, 200)}…` : snippet });
    }
  };
  // Read as the navigation tools read: no symlink followed, files with one link only (confined-tree.ts).
  walkTree(ctx.boundary, path.relative(ctx.boundary.root, dir).split(path.sep).filter((n) => n !== ''), {
    enter: (name) => !SKIPPED_DIRS.has(name),
    file: (_file, stamp) => !truncated && stamp.size <= MAX_FILE_BYTES,
    read: (file, content) => content && search(file, content.text),
  });
  const inTypeScript = /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(params.text) && matches.some((m) => TYPESCRIPT.test(m.file));
  return {
    text: params.text,
    matches,
    ...(truncated && { truncated: true, note: `only the first ${MAX_MATCHES} matches` }),
    ...(inTypeScript && {
      hint: `"${params.text}" is a name in TypeScript files: code.find_references finds its uses exactly (not comments, strings or other names alike), code.navigate_imports where it comes from`,
    }),
  };
}
