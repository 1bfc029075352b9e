/**
 * The benchmark worker's workflows (./workflows.ts) bundled once for all the benchmarks of `npm run
 * bench`, not by each (webpack takes seconds of CPU, and no benchmark measures it): kept beside the
 * compiled benchmarks, stamped with the compiled code it came from, so a stale bundle is never used.
 * Run from source (tsx), a benchmark bundles as before.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { codeStamp } from '../src/worker/prebuilt-bundle';
import { quietBundleLogger } from './run-main';

/** dist/ when compiled (this file is dist/bench/bench-bundle.js). */
const DIST = path.join(__dirname, '..');
const BUNDLE = path.join(DIST, 'bench-workflow-bundle.js');

export async function benchWorkflowBundle(log: (line: string) => void): Promise<{ code: string } | { codePath: string }> {
  if (!__filename.endsWith('.js')) return { code: await bundle(log) };
  const stamp = `${codeStamp(path.join(DIST, 'src'))} ${codeStamp(__dirname)}`;
  if (existsSync(BUNDLE) && existsSync(`${BUNDLE}.stamp`) && readFileSync(`${BUNDLE}.stamp`, 'utf8').trim() === stamp) {
    log(`workflows: ${path.relative(process.cwd(), BUNDLE)}, bundled by an earlier benchmark of this build`);
    return { codePath: BUNDLE };
  }
  const code = await bundle(log);
  // Written aside and renamed: a benchmark reading it meanwhile sees the old bundle or the new, whole.
  writeFileSync(`${BUNDLE}.${process.pid}`, code);
  renameSync(`${BUNDLE}.${process.pid}`, BUNDLE);
  writeFileSync(`${BUNDLE}.stamp`, `${stamp}\n`);
  return { codePath: BUNDLE };
}

async function bundle(log: (line: string) => void): Promise<string> {
  log('bundling workflows...');
  const { code } = await bundleWorkflowCode({ workflowsPath: require.resolve('./workflows'), logger: quietBundleLogger(log) });
  return code;
}
