/**
 * The workflow bundle built once, ahead of time, instead of at every worker start (webpack takes
 * seconds of CPU; Temporal's production guidance is to ship a prebuilt bundle). `npm run build`
 * writes one beside the compiled code, stamped with a hash of that code, so a stale bundle is never
 * used; CADRE_WORKFLOW_BUNDLE names one built elsewhere (a container image, a test run).
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { CadreError } from '../errors/cadre-error';

/** The compiled code's root (`dist/src` when running compiled, `src` from source). */
const CODE_ROOT = path.join(__dirname, '..');
/** Where the build writes the bundle and its stamp: beside `dist/src`. */
export const BUILT_BUNDLE = path.join(CODE_ROOT, '..', 'workflow-bundle.js');
const BUILT_STAMP = `${BUILT_BUNDLE}.stamp`;

export interface PrebuiltBundle {
  codePath: string;
  /** Where it came from, for the worker's start line. */
  source: 'CADRE_WORKFLOW_BUNDLE' | 'build';
}

/**
 * A bundle to run instead of bundling now: the one CADRE_WORKFLOW_BUNDLE names (an error when it is
 * missing: an operator asked for it), else the build's when it was made from the code running now.
 */
export function prebuiltBundle(env: NodeJS.ProcessEnv = process.env): PrebuiltBundle | undefined {
  const named = env.CADRE_WORKFLOW_BUNDLE?.trim();
  if (named) {
    if (!existsSync(named)) throw new CadreError(`CADRE_WORKFLOW_BUNDLE: no file ${named}; build one with \`npm run build\` or unset the variable`);
    return { codePath: path.resolve(named), source: 'CADRE_WORKFLOW_BUNDLE' };
  }
  if (!isCompiled() || !existsSync(BUILT_BUNDLE) || !existsSync(BUILT_STAMP)) return undefined;
  return readFileSync(BUILT_STAMP, 'utf8').trim() === codeStamp() ? { codePath: BUILT_BUNDLE, source: 'build' } : undefined;
}

/** Running the compiled JavaScript (dist), not the TypeScript sources through a loader. */
function isCompiled(): boolean {
  return __filename.endsWith('.js');
}

/** A hash of every compiled file the bundle may hold: any rebuild of the code changes it. */
export function codeStamp(root = CODE_ROOT): string {
  const hash = createHash('sha256');
  for (const file of jsFiles(root)) hash.update(path.relative(root, file)).update('\0').update(readFileSync(file)).update('\0');
  return hash.digest('hex');
}

function jsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .flatMap((entry) => {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) return jsFiles(file);
      return entry.name.endsWith('.js') ? [file] : [];
    });
}
