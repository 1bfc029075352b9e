import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** `node --import <this>` runs TypeScript from source in child processes, whatever their working directory. */
export const TSX = pathToFileURL(path.join(path.dirname(require.resolve('tsx/package.json')), 'dist', 'loader.mjs')).href;
