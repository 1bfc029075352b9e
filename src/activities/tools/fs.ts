import type { FsReadParams, FsWriteParams } from '../../spec/tools';
import { openInside } from '../confinement';
import { ErrorTypes, permanent } from '../../errors/application-failures';
import type { ToolContext } from './context';

export async function readWorkspaceFile(params: FsReadParams, ctx: ToolContext) {
  const file = await openInside(ctx.boundary, params.path, 'read');
  let content: string;
  try {
    const size = (await file.stat()).size;
    if (size > ctx.limits.readBytes) {
      throw permanent(ErrorTypes.TooLarge, `"${params.path}" has ${size} bytes; fs.read returns at most ${ctx.limits.readBytes} (read big files in a shell step)`);
    }
    content = await file.readFile('utf8');
  } finally {
    await file.close();
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
  const file = await openInside(ctx.boundary, params.path, params.append ? 'append' : 'write');
  try {
    await file.writeFile(text);
  } finally {
    await file.close();
  }
  return { path: params.path, bytes: Buffer.byteLength(text) };
}
