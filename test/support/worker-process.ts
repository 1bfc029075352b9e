/**
 * A cadre worker in a process of its own, so a test can SIGKILL it mid-plan.
 * Usage: node dist/test/support/worker-process.js <taskQueue>, compiled by the test run's setup
 * (env: CADRE_TEST_ADDRESS, CADRE_TEST_BUNDLE; CADRE_TEST_ACTIVITIES_ONLY=1 for a worker that runs
 * activities and no workflows; CADRE_TEST_WORKER_HOLD=1 for one that waits for a line on stdin before
 * it polls)
 */
import { installConciseLogging } from '../../src/worker/logging';
import { createCadreWorker } from '../../src/worker/worker';

async function main(): Promise<void> {
  installConciseLogging('ERROR');
  const { worker } = await createCadreWorker({
    address: process.env.CADRE_TEST_ADDRESS as string,
    namespace: process.env.CADRE_TEST_NAMESPACE ?? 'default',
    taskQueue: process.argv[2],
    workflowBundle: { codePath: process.env.CADRE_TEST_BUNDLE as string },
    ...(process.env.CADRE_TEST_ACTIVITIES_ONLY === '1' && { overrides: { workflowBundle: undefined, workflowsPath: undefined } }),
  });
  if (process.env.CADRE_TEST_WORKER_HOLD === '1') {
    // Held (prepareWorkerProcess): created, not polling, until the test says run.
    process.stdout.write('created\n');
    await new Promise<void>((resolve) => {
      // A test gone before it said run leaves nothing behind.
      const gone = () => process.exit(0);
      process.stdin.once('end', gone);
      process.stdin.once('data', () => {
        process.stdin.off('end', gone);
        resolve();
      });
    });
  }
  const running = worker.run();
  process.stdout.write('ready\n');
  await running;
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
