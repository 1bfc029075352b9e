/**
 * One Temporal dev server for the whole test run, and the build's workflow bundle (built first when a source changed).
 * TEMPORAL_ADDRESS reuses an existing server instead.
 */
import path from 'node:path';
import { resolveServer, type TemporalServer } from '../../src/worker/dev-server';
import { ensureBuilt } from './build';
import { useRunFolder } from './run-tmp';

declare global {
  var cadreTestServer: TemporalServer | undefined;
}

export default async function globalSetup(): Promise<void> {
  ensureBuilt((line) => process.stderr.write(`${line}\n`));
  // Before the server starts: it, the jest workers and all they start inherit TMPDIR (run-tmp.ts).
  const dir = useRunFolder();
  const server = await resolveServer({ dataDir: dir, ephemeral: true, log: (line) => process.stderr.write(`${line}\n`) });
  globalThis.cadreTestServer = server;
  // The build's bundle of the same workflows, fresh after ensureBuilt: bundling again costs seconds before any test starts.
  const bundlePath = path.join(__dirname, '..', '..', 'dist', 'workflow-bundle.js');
  process.env.CADRE_TEST_ADDRESS = server.address;
  process.env.CADRE_TEST_NAMESPACE = server.namespace;
  process.env.CADRE_TEST_BUNDLE = bundlePath;
  // `cadre worker` and `cadre dev` started by tests run this bundle too, rather than bundle again
  // (seconds of CPU each); test/worker-command.test.ts starts one from the build's own bundle.
  process.env.CADRE_WORKFLOW_BUNDLE = bundlePath;
  // Each file's CPU (file-cpu.ts), for the closing table of the run (summary-reporter.js).
  process.env.CADRE_TEST_CPU_FILE = path.join(dir, 'cpu-by-file.jsonl');
  // Workers started by tests record no run analytics unless a test turns them on (test/analytics.test.ts),
  // and never into the machine's ~/.cadre.
  process.env.CADRE_ANALYTICS = 'off';
  process.env.CADRE_ANALYTICS_DIR = path.join(dir, 'analytics');
}
