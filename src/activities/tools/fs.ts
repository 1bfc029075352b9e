import { appendFile, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FsReadParams, FsWriteParams } from '../../spec/tools';
import { ErrorTypes, permanent } from '../errors';
import type { ToolContext } from './context';
import { insideWorkspace } from './workspace';

/** Step outputs live in Temporal's history, whose payloads stop at 2 MB. */
export const MAX_READ_BYTES = 1024 * 1024;

export async function readWorkspaceFile(params: FsReadParams, ctx: ToolContext) {
  const file = insideWorkspace(ctx.workspace, params.path);
  let content: string;
  try {
    const size = (await stat(file)).size;
    if (size > MAX_READ_BYTES) {
      throw permanent(ErrorTypes.TooLarge, `"${params.path}" has ${size} bytes; fs.read returns at most ${MAX_READ_BYTES} (read big files in a shell step)`);
    }
    content = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
      throw permanent(ErrorTypes.FileNotFound, `no file "${params.path}" in the workspace`);
    }
    throw err;
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
  const file = insideWorkspace(ctx.workspace, params.path);
  const text = typeof params.content === 'string' ? params.content : JSON.stringify(params.content, null, 2);
  await mkdir(path.dirname(file), { recursive: true });
  if (params.append) await appendFile(file, text);
  else await writeFile(file, text);
  return { path: params.path, bytes: Buffer.byteLength(text) };
}
