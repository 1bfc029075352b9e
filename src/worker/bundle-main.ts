/**
 * `npm run build`'s last step: bundles the compiled workflows once (dist/workflow-bundle.js) and
 * stamps the bundle with the code it came from, so `cadre worker` starts without webpack.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { bundleWorkflowCode } from '@temporalio/worker';
import { BUILT_BUNDLE, codeStamp } from './prebuilt-bundle';

async function main(): Promise<void> {
  const started = Date.now();
  const stamp = codeStamp();
  const stampFile = `${BUILT_BUNDLE}.stamp`;
  // A build that changed no compiled file (tsc is incremental) keeps its bundle.
  if (existsSync(BUILT_BUNDLE) && existsSync(stampFile) && readFileSync(stampFile, 'utf8').trim() === stamp) return;
  const warn = (message: string) => process.stderr.write(`bundle: ${message}\n`);
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../workflows'),
    logger: { trace: () => undefined, debug: () => undefined, info: () => undefined, log: () => undefined, warn, error: warn },
  });
  writeFileSync(BUILT_BUNDLE, code);
  writeFileSync(stampFile, `${stamp}\n`);
  process.stderr.write(`workflow bundle: ${BUILT_BUNDLE} (${Math.round(code.length / 1024)} KiB, ${Date.now() - started} ms)\n`);
}

main().catch((err: Error) => {
  process.stderr.write(`workflow bundle: ${err.message}\n`);
  process.exit(1);
});
