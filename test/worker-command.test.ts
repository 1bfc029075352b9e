import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { findTemporalCli } from '../src/worker/temporal-cli';
import { freePort } from '../src/worker/ports';
import { exited, runCadre, spawnCadre, startCadreWorker } from './support/cli';
import { tempWorkspace, uniqueId } from './support/harness';

async function waitForServer(address: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      await connection.workflowService.getSystemInfo({});
      await connection.close();
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

describe('cadre worker against a plain Temporal dev server', () => {
  let server: ChildProcess;
  let address: string;

  beforeAll(async () => {
    const cli = await findTemporalCli({ build: false });
    if (!cli) throw new Error('the temporal CLI is needed for this test (run .ci/run once to build it)');
    const port = await freePort();
    address = `127.0.0.1:${port}`;
    // No --search-attribute flags: a server that has never seen cadre.
    server = spawn(cli, ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--headless', '--log-level', 'error'], { stdio: 'ignore' });
    await waitForServer(address);
  });

  afterAll(async () => {
    server.kill('SIGTERM');
    await exited(server);
  });

  test('run explains missing search attributes; the worker registers them and runs plans; status says when no worker answers', async () => {
    const dir = tempWorkspace();
    const taskQueue = uniqueId('plain');
    const env = { ...process.env, TEMPORAL_ADDRESS: address, CADRE_TASK_QUEUE: taskQueue, CADRE_LOG_LEVEL: 'ERROR' };
    const cadre = (args: string[]) => runCadre(args, dir, env);
    writeFileSync(path.join(dir, 'plan.yaml'), 'name: plain\nsteps:\n  - { id: hi, tool: shell, with: { command: "echo hi" } }\n');
    writeFileSync(path.join(dir, 'ask.yaml'), 'name: plain-ask\nsteps:\n  - { id: q, ask: { question: "?" } }\n');

    const early = await cadre(['run', 'plan.yaml']);
    expect(early).toMatchObject({ code: 1, stderr: expect.stringContaining("lacks cadre's search attributes: run `cadre setup` or start `cadre worker`") });

    const worker = await startCadreWorker([], dir, env, 60_000);
    let exitCode: number | null = null;
    try {
      expect(worker.stderr()).toContain('registered search attributes CadreStatus, CadrePlan, CadreWorkerState, CadreHost, CadreForkedFrom');
      const run = await cadre(['run', 'plan.yaml', '--wait', '--id', uniqueId('plain')]);
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/plain \(.*\): completed/);
      expect(await cadre(['setup'])).toMatchObject({ code: 0, stdout: 'already present: CadreStatus, CadrePlan, CadreWorkerState, CadreHost, CadreForkedFrom\n' });
    } finally {
      exitCode = await worker.stop();
    }
    expect(exitCode).toBe(0);

    const id = uniqueId('orphan');
    expect(await cadre(['run', 'ask.yaml', '--id', id])).toMatchObject({ code: 0 });
    const status = await cadre(['status', id]);
    expect(status).toMatchObject({
      code: 1,
      stderr: `cadre: run ${id} is running, but no worker answered within 10s: start one with \`cadre worker\` or \`cadre dev\`, or give a loaded one time (task queue "${taskQueue}")\n`,
    });
  });
});

describe('cadre worker started before its server', () => {
  test('waits for the server instead of exiting, then runs', async () => {
    const cli = await findTemporalCli({ build: false });
    if (!cli) throw new Error('the temporal CLI is needed for this test (run .ci/run once to build it)');
    const port = await freePort();
    const env = { ...process.env, TEMPORAL_ADDRESS: `127.0.0.1:${port}`, CADRE_TASK_QUEUE: uniqueId('early'), CADRE_LOG_LEVEL: 'ERROR' };
    const worker = spawnCadre(['worker'], tempWorkspace(), env);
    let stderr = '';
    worker.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const workerExit = exited(worker);
    let server: ChildProcess | undefined;
    try {
      const until = async (text: string) => {
        const deadline = Date.now() + 120_000;
        while (!stderr.includes(text)) {
          if (Date.now() > deadline) throw new Error(`never saw "${text}" in: ${stderr}`);
          await new Promise((r) => setTimeout(r, 200));
        }
      };
      await until('trying again every 2s');
      server = spawn(cli, ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--headless', '--log-level', 'error'], { stdio: 'ignore' });
      await until('worker running');
      expect(stderr).toContain(`reached Temporal at 127.0.0.1:${port}`);
      // Ctrl-C once it runs: it stops cleanly (a wait that failed above is the error to see, not this).
      worker.kill('SIGINT');
      expect(await workerExit).toBe(0);
    } finally {
      worker.kill('SIGKILL');
      server?.kill('SIGTERM');
      if (server) await exited(server);
    }
  });
});

describe("the build's workflow bundle", () => {
  test("a worker with no bundle named starts from the build's prebuilt one and runs plans", async () => {
    const dir = tempWorkspace();
    const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: process.env.CADRE_TEST_ADDRESS, CADRE_TASK_QUEUE: uniqueId('built'), CADRE_LOG_LEVEL: 'ERROR' };
    delete env.CADRE_WORKFLOW_BUNDLE;
    writeFileSync(path.join(dir, 'plan.yaml'), 'name: built\nsteps:\n  - { id: hi, tool: shell, with: { command: "echo hi" } }\n');
    const worker = await startCadreWorker([], dir, env, 60_000);
    try {
      expect(worker.stderr()).toContain("(workflows: the build's prebuilt bundle)");
      const run = await runCadre(['run', 'plan.yaml', '--wait', '--id', uniqueId('built')], dir, env);
      expect(run).toMatchObject({ code: 0, stdout: expect.stringMatching(/built \(.*\): completed/) });
    } finally {
      expect(await worker.stop()).toBe(0);
    }
  });
});
