/**
 * TypeScript, loaded through the code cache (./compile-cache.ts) in cadre's cache directory. The
 * code thread (thread-main.ts) imports this before the tools' modules, whose `import ts from
 * 'typescript'` then finds it loaded.
 */
import path from 'node:path';
import { cacheDir } from '../../../cache-dir';
import { requireWithCodeCache } from './compile-cache';

export const typescriptLoad = requireWithCodeCache('typescript', path.join(cacheDir(), 'v8'));
