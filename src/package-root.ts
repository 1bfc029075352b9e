/** Where cadre's own files are (roles, examples, package.json), from src/ (ts) or dist/src/ (compiled) alike. */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

export function packageRoot(): string {
  let dir = __dirname;
  while (!existsSync(path.join(dir, 'package.json')) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  return dir;
}

export function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}
