/** Whether a path lies inside another: what confinement (activities) and cadre's own git both ask. */
import path from 'node:path';

/** Whether `child` is `parent` or under it, for paths already resolved (no symlinks, "." or ".."). */
export function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (rel.split(path.sep)[0] !== '..' && !path.isAbsolute(rel));
}
