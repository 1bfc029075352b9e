import type { FsEditParams, FsReadParams, FsWriteParams } from '../../plan-format/tools';
import { readdir } from 'node:fs/promises';
import { openInside, openToRead, resolveInside } from '../confinement';
import { ErrorTypes, permanent } from '../../errors/application-failures';
import type { ToolContext } from './context';
import { checksSyntax, syntaxProblem } from './syntax';
import { editedText, numbered, windowOf } from './text-views';

/**
 * A file of the workspace. A plan gets the whole text (and its JSON), or the lines `from`–`to`; a
 * model gets a window of numbered lines (100 unless it asks for others) and what to read next.
 */
export async function readWorkspaceFile(params: FsReadParams, ctx: ToolContext) {
  if (ctx.forModel) {
    const content = await readText(params.path, ctx).catch((err: unknown) => folderOrExplained(params.path, ctx, err));
    return typeof content === 'string' ? windowOf(params.path, content, params.from, params.to).view : content.listed;
  }
  const content = await readText(params.path, ctx);
  const windowed = params.from !== undefined || params.to !== undefined;
  if (windowed) {
    const window = windowOf(params.path, content, params.from, params.to);
    return { path: params.path, content: window.text, from: window.from, to: window.to, lines: window.total };
  }
  let json: unknown;
  try {
    json = JSON.parse(content);
  } catch {
    json = undefined;
  }
  return { path: params.path, content, ...(json !== undefined && { json }) };
}

export async function writeWorkspaceFile(params: FsWriteParams, ctx: ToolContext) {
  const text = typeof params.content === 'string' ? params.content : JSON.stringify(params.content, null, 2);
  if (checksSyntax(params.path)) {
    const before = await readIfThere(params.path, ctx);
    await refuseBrokenSyntax(params.path, params.append ? (before ?? '') + text : text, before);
  }
  const file = await openInside(ctx.boundary, params.path, params.append ? 'append' : 'write');
  try {
    await file.writeFile(text);
  } finally {
    await file.close();
  }
  const bytes = Buffer.byteLength(text);
  if (ctx.forModel) return `${params.append ? 'Appended' : 'Wrote'} ${lineCount(text)} (${bytes} bytes) to ${params.path}. ${DONE_YET}`;
  return { path: params.path, bytes };
}

/**
 * Replaces an exact piece of a file's text, found once (or every time, with `all`). With no match,
 * or several, nothing changes and the error shows where to look, with line numbers.
 */
export async function editWorkspaceFile(params: FsEditParams, ctx: ToolContext) {
  const before = ctx.forModel ? await readText(params.path, ctx).catch((err: unknown) => explained(params.path, ctx, err)) : await readText(params.path, ctx);
  const edit = editedText(params.path, before, params.old_text, params.new_text, params.all === true);
  if ('problem' in edit) throw permanent(ErrorTypes.EditNotApplied, edit.problem);
  await refuseBrokenSyntax(params.path, edit.text, before);
  const file = await openInside(ctx.boundary, params.path, 'write');
  try {
    await file.writeFile(edit.text);
  } finally {
    await file.close();
  }
  if (ctx.forModel) {
    const now = `Lines ${edit.shown.from}-${edit.shown.to} of ${edit.shown.total} now:\n${numbered(edit.shown.lines, edit.shown.from)}`;
    return `Edited ${params.path}: replaced ${edit.replaced === 1 ? 'it' : `${edit.replaced} times`}. ${now}\n${DONE_YET}`;
  }
  return { path: params.path, replaced: edit.replaced, bytes: Buffer.byteLength(edit.text) };
}

/** What a model is told after a change: small models otherwise go on writing the same file, or stop halfway. */
const DONE_YET = 'Check the task: if it asks for more, do that next; if all of it is done, finish with your answer.';

/** Names a folder lists for a model that read it as a file: it wanted to know what is in it. */
const MAX_LISTED = 200;

/**
 * A model's read of a folder is its listing, as SWE-agent's viewer does: small models call fs_read
 * on a folder to list it, and Qwen2.5-Coder 1.5B took an error that listed it as a dead end ("0"
 * to "count the .txt files in data"). Nothing more is said: told how to read one of the files, it
 * read one instead of counting them.
 */
async function folderOrExplained(target: string, ctx: ToolContext, err: unknown): Promise<{ listed: string }> {
  const names = (err as { type?: string }).type === ErrorTypes.BadToolInput ? await listing(target, ctx) : undefined;
  if (!names) return explained(target, ctx, err);
  const folder = target.replace(/\/+$/, '');
  return { listed: `${folder} is a folder; it holds ${entries(names)}` };
}

/**
 * A model's edit of a folder, or a read or edit that missed, says what is there: a folder edited
 * as a file lists the folder, and a file that is not there lists the nearest folder that is
 * (Qwen2.5-Coder 1.5B made up node_modules/math.js/src/math.js for the math.js beside it). Other
 * errors stand.
 */
async function explained(target: string, ctx: ToolContext, err: unknown): Promise<never> {
  const type = (err as { type?: string }).type;
  if (type === ErrorTypes.BadToolInput) {
    const names = await listing(target, ctx);
    if (names) throw permanent(ErrorTypes.BadToolInput, `${target} is a folder, not a file; it holds ${entries(names)}\nName one of its files by its path (${target.replace(/\/+$/, '')}/<name>).`);
  }
  if (type === ErrorTypes.FileNotFound) {
    const parts = target.split('/').filter((part) => part !== '' && part !== '.');
    for (let depth = parts.length - 1; depth >= 0; depth--) {
      const folder = parts.slice(0, depth).join('/');
      const names = await listing(folder || '.', ctx);
      if (!names) continue;
      // A file of the same name in the nearest folder is likely the one meant.
      const name = parts.at(-1);
      const meant = depth < parts.length - 1 && name !== undefined && names.includes(name) ? JSON.stringify(folder ? `${folder}/${name}` : name) : undefined;
      const where = folder ? `the folder ${folder}` : 'the workspace';
      const said = meant ? `. Did you mean ${meant}? ${where[0].toUpperCase()}${where.slice(1)}` : `; ${where}`;
      throw permanent(ErrorTypes.FileNotFound, `${(err as Error).message}${said} holds ${entries(names)}`);
    }
  }
  throw err;
}

/** A folder's entries inside the boundary (folders marked with a /), or undefined when it is not a folder there. */
async function listing(folder: string, ctx: ToolContext): Promise<string[] | undefined> {
  const resolved = await resolveInside(ctx.boundary, folder).catch(() => undefined);
  const found = resolved && (await readdir(resolved.path, { withFileTypes: true }).catch(() => undefined));
  return found?.map((e) => (e.isDirectory() ? `${e.name}/` : e.name)).sort();
}

function entries(names: string[]): string {
  if (names.length === 0) return 'nothing';
  const shown = names.slice(0, MAX_LISTED).join('\n');
  const more = names.length > MAX_LISTED ? `\n(${names.length - MAX_LISTED} more not shown)` : '';
  return `${names.length === 1 ? '1 entry' : `${names.length} entries`}:\n${shown}${more}`;
}

/** A change that would leave a file with a syntax error it did not have is refused, naming the line. */
async function refuseBrokenSyntax(file: string, after: string, before: string | undefined): Promise<void> {
  const problem = await syntaxProblem(file, after);
  if (!problem || (before !== undefined && (await syntaxProblem(file, before)))) return;
  throw permanent(
    ErrorTypes.SyntaxBroken,
    `not written: ${file} would not parse: line ${problem.line}, column ${problem.column}: ${problem.message}. The file is unchanged; fix the text and try again.`,
  );
}

async function readText(file: string, ctx: ToolContext): Promise<string> {
  const { handle, size } = await openToRead(ctx.boundary, file);
  const limit = ctx.limits.readBytes;
  const tooLarge = (bytes: string) => permanent(ErrorTypes.TooLarge, `"${file}" has ${bytes} bytes; fs.read returns at most ${limit} (read big files in a shell step)`);
  try {
    if (size > limit) throw tooLarge(String(size));
    // Reads of the size seen at open and a byte more: one read for a file as it was (a short read
    // that reached that size is its end), more for one that grew, never past the limit.
    const chunks: Buffer[] = [];
    let total = 0;
    for (let want = size + 1; ; want = READ_CHUNK_BYTES) {
      const chunk = Buffer.allocUnsafe(Math.min(want, limit + 1 - total));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      chunks.push(chunk.subarray(0, bytesRead));
      total += bytesRead;
      if (total > limit) throw tooLarge(`over ${limit}`);
      if (bytesRead === 0 || (bytesRead < chunk.length && total >= size)) return Buffer.concat(chunks, total).toString('utf8');
    }
  } finally {
    await handle.close();
  }
}

/** What a read of a file that grew since it was opened asks for at a time. */
const READ_CHUNK_BYTES = 64 * 1024;

/** The file's text before a write, for the syntax check; a file too big to read is checked as if new. */
async function readIfThere(file: string, ctx: ToolContext): Promise<string | undefined> {
  try {
    return await readText(file, ctx);
  } catch (err) {
    const type = (err as { type?: string }).type;
    if (type === ErrorTypes.FileNotFound || type === ErrorTypes.TooLarge) return undefined;
    throw err;
  }
}

function lineCount(text: string): string {
  const lines = text === '' ? 0 : text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  return lines === 1 ? '1 line' : `${lines} lines`;
}
