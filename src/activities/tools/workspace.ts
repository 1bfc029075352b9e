import path from 'node:path';
import { ErrorTypes, permanent } from '../errors';

/** Resolves `target` inside `workspace`, refusing paths that escape it. */
export function insideWorkspace(workspace: string, target: string): string {
  const root = path.resolve(workspace);
  const resolved = path.resolve(root, target);
  const relative = path.relative(root, resolved);
  if (relative.startsWith('..') || path.isAbsolute(relative)) {
    throw permanent(ErrorTypes.OutsideWorkspace, `path "${target}" is outside the workspace ${root}`);
  }
  return resolved;
}
