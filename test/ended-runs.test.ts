import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { CadreClient, UsageError } from '../src/client/client';
import { findTemporalCli } from '../src/worker/temporal-cli';
import { CadrePlan, CadreStatus } from '../src/protocol/definitions';
import { type CliResult, exited, runCadre, spawnCadre, testServerEnv } from './support/cli';
import { compile, startPlan, tempWorkspace, uniqueId, waitUntil, fileWorker } from './support/harness';

// One worker for the file's runs, each its own plan and workflow id (harness.ts, fileWorker).
const withFileWorker = fileWorker('tq-ended-runs');

const run = promisify(execFile);
const address = () => process.env.CADRE_TEST_ADDRESS as string;
const cadre = (args: string[], cwd: string): Promise<CliResult> => runCadre(args, cwd, testServerEnv());

const WAITING_PLAN = 'name: ended-waiting\nsteps:\n  - { id: hold, ask: { question: "Go on?" } }\n';

async function temporalCli(): Promise<string> {
  const cli = await findTemporalCli({ build: false });
  if (!cli) throw new Error('the temporal CLI is needed for this test (run .ci/run once to build it)');
  return cli;
}

/** Polls `cadre list --json` until the run is listed with `status` (visibility lags the server a little). */
async function listedStatus(id: string, status: string, cwd: string): Promise<string | undefined> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const runs = JSON.parse((await cadre(['list', '--json', '--limit', '100'], cwd)).stdout) as { workflowId: string; status: string }[];
    const listed = runs.find((r) => r.workflowId === id)?.status;
    if (listed === status || Date.now() > deadline) return listed;
    await new Promise((r) => setTimeout(r, 300));
  }
}

async function listedIds(args: string[], cwd: string): Promise<string[]> {
  const listed = await cadre(['list', '--json', '--limit', '100', ...args], cwd);
  return (JSON.parse(listed.stdout) as { workflowId: string }[]).map((r) => r.workflowId);
}

/** `promise`'s value, or `late` after `ms`: a follower that never ends fails the test instead of hanging it. */
async function within<T>(promise: Promise<T>, ms: number, late: string): Promise<T | string> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<string>((resolve) => (timer = setTimeout(() => resolve(late), ms)));
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

describe('runs ended outside cadre', () => {
  test('terminated: watch exits 1 within 2 s; status, list and result say terminated', async () => {
    const temporal = await temporalCli();
    const ws = tempWorkspace();
    const plan = compile(WAITING_PLAN, ws);
    await withFileWorker(async (h) => {
      const id = await startPlan(h, plan);
      await waitUntil(h, id, (d) => d.status === 'waiting');

      // The workflow sleeps while it waits on a human; its elapsed time must run on all the same.
      const first = await cadre(['status', id, '--json'], ws);
      const second = await cadre(['status', id, '--json'], ws);
      expect(first.code).toBe(0);
      expect(JSON.parse(second.stdout).elapsedMs).toBeGreaterThan(JSON.parse(first.stdout).elapsedMs);

      const watcher = spawnCadre(['watch', id], ws, testServerEnv());
      const watchExit = exited(watcher);
      let watched = '';
      watcher.stdout!.on('data', (chunk: Buffer) => (watched += chunk.toString()));
      const deadline = Date.now() + 30_000;
      while (!watched.includes('answer with:') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(watched).toContain('answer with:');

      await run(temporal, ['workflow', 'terminate', '--address', address(), '--workflow-id', id, '--reason', 'stopped by the test']);
      const terminatedAt = Date.now();
      const code = await within(watchExit, 10_000, 'still watching after 10 s');
      const exitMs = Date.now() - terminatedAt;
      watcher.kill();
      console.log(`cadre watch exited ${exitMs} ms after \`temporal workflow terminate\` returned`);
      expect(code).toBe(1);
      expect(exitMs).toBeLessThan(2000);
      expect(watched).toMatch(/ended-waiting: terminated \(terminated by .*: stopped by the test\)/);

      const status = await cadre(['status', id], ws);
      expect(status.code).toBe(1);
      expect(status.stdout).toMatch(new RegExp(`^ended-waiting \\(${id}\\): terminated, .*\n  terminated by .*: stopped by the test\n`));
      expect(status.stdout).toMatch(/\? hold\s+waiting/); // step records replayed by the worker
      expect(status.stdout).not.toContain('answer with'); // nobody can answer a closed run

      expect(await listedStatus(id, 'terminated', ws)).toBe('terminated');
      expect(await listedIds(['--status', 'waiting'], ws)).not.toContain(id); // its CadreStatus still says waiting
      expect(await listedIds(['--status', 'terminated'], ws)).toContain(id);

      const result = await cadre(['result', id], ws);
      expect(result.code).toBe(1);
      expect(result.stdout).toMatch(/ended-waiting \(.*\): terminated/);
    });
  });

  test('timed out, with no worker to replay it: a record from Temporal alone, status timed_out', async () => {
    const ws = tempWorkspace();
    const plan = compile(WAITING_PLAN, ws);
    const client = await CadreClient.connect({ address: address() });
    const id = uniqueId('timed-out');
    const taskQueue = uniqueId('no-worker');
    try {
      const handle = await client.client.workflow.start('runPlan', {
        workflowId: id,
        taskQueue,
        args: [{ plan, inputs: {} }],
        workflowExecutionTimeout: '1s',
        typedSearchAttributes: [
          { key: CadrePlan, value: plan.name },
          { key: CadreStatus, value: 'running' },
        ],
      });
      while ((await handle.describe()).status.name === 'RUNNING') await new Promise((r) => setTimeout(r, 200));
    } finally {
      await client.close();
    }

    const status = await cadre(['status', id, '--json'], ws);
    expect(status.code).toBe(1);
    const d = JSON.parse(status.stdout);
    expect(d).toMatchObject({
      plan: 'ended-waiting',
      status: 'timed_out',
      steps: [],
      waiting: [],
      note: `Temporal timed the run out (workflow timeout 1.0s); step records need a running cadre worker (task queue "${taskQueue}") to replay the history`,
    });
    expect(Date.parse(d.endedAt) - Date.parse(d.startedAt)).toBe(d.elapsedMs);

    expect(await listedStatus(id, 'timed_out', ws)).toBe('timed_out');
    expect(await listedIds(['--status', 'running'], ws)).not.toContain(id); // its CadreStatus still says running
    expect(await listedIds(['--status', 'timed_out'], ws)).toContain(id);
  });

  test('cancel of an ended run, unknown list statuses and bad run ids are one clear line', async () => {
    const ws = tempWorkspace();
    writeFileSync(path.join(ws, 'plan.yaml'), WAITING_PLAN);
    const plan = compile('name: ended-quick\nsteps:\n  - { id: hi, tool: shell, with: { command: "echo hi" } }\n', ws);
    await withFileWorker(async (h) => {
      const id = await startPlan(h, plan);
      expect((await h.client.result(id)).status).toBe('completed');
      expect(await cadre(['cancel', id], ws)).toMatchObject({ code: 1, stdout: '', stderr: `cadre: run ${id} already ended: completed\n` });

      // Callers of the TS API get the same checks, starting a run included.
      const tooLong = await h.client.diagnostics('x'.repeat(1001)).catch((err: Error) => err);
      expect(tooLong).toBeInstanceOf(UsageError);
      expect(tooLong).toHaveProperty('message', 'the run id is 1001 bytes long; Temporal takes at most 1000');
      const control = await h.client.start(plan, {}, { workflowId: 'a\nb', taskQueue: h.taskQueue }).catch((err: Error) => err);
      expect(control).toBeInstanceOf(UsageError);
      expect(control).toHaveProperty('message', 'the run id has a control character ("\\n" at position 1)');
    });
    expect(await cadre(['cancel', 'no-such-run'], ws)).toMatchObject({ code: 1, stderr: 'cadre: no run with id "no-such-run"\n' });

    const bogus = await cadre(['list', '--status', 'bogus'], ws);
    expect(bogus.code).toBe(2);
    expect(bogus.stderr.split('\n')[0]).toBe(
      "error: option '--status <status>' argument 'bogus' is invalid. Allowed choices are running, paused, waiting, completed, failed, budget_exhausted, cancelled, terminated, timed_out.",
    );

    // Refused before any server is contacted: this address has none.
    const offline = { ...testServerEnv(), TEMPORAL_ADDRESS: '127.0.0.1:1' };
    expect(await runCadre(['run', 'plan.yaml', '--id', ''], ws, offline)).toEqual({ code: 2, stdout: '', stderr: 'cadre: the run id is empty\n' });
    expect(await runCadre(['watch', 'a\u0007b'], ws, offline)).toEqual({
      code: 2,
      stdout: '',
      stderr: 'cadre: the run id has a control character ("\\u0007" at position 1)\n',
    });
  });
});
