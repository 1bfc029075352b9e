/**
 * A worker SIGKILLed mid-step must not leave its tool running: Temporal retries the step on
 * another worker, and two copies of a command must not run side by side.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities } from '../../src/activities';
import { CadreClient } from '../../src/client/client';
import { compile, kill, startWorkerProcess, tempWorkspace, uniqueId } from '../support/harness';
import { processesRunning, uniqueSleep, untilProcesses } from '../support/processes';
import { DEFAULT_PROFILE } from '../../src/sandbox/profile';

/** A command with a child and a grandchild, each sleeping with arguments no other process has. */
function tree(nap: string): string {
  return `
sleep ${nap} &
sh -c 'sleep ${nap} & wait' &
touch started
wait
`;
}

async function poll(test: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Live processes whose arguments start with `prefix`: the sandbox's bwrap, its shells, the sleeps. */
function processesOf(marker: string): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        return cmdline.includes(marker) && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
      } catch {
        return false;
      }
    })
    .map(Number);
}

const onLinux = existsSync('/proc/self/stat') ? describe : describe.skip;

onLinux('tools die with their worker', () => {
  test('SIGKILL on the worker ends the sandbox: the command, its child and its grandchild, within 2 s', async () => {
    const ws = tempWorkspace();
    const nap = uniqueSleep();
    writeFileSync(path.join(ws, 'tree.sh'), tree(nap));
    const plan = compile(
      `
name: orphans
steps:
  - { id: tree, tool: shell, timeout: 5m, with: { command: "sh tree.sh" } }
`,
      ws,
    );
    const taskQueue = uniqueId('orphans');
    const client = await CadreClient.connect({ address: process.env.CADRE_TEST_ADDRESS });
    const worker = await startWorkerProcess(taskQueue);
    const { workflowId } = await client.start(plan, {}, { workflowId: uniqueId('orphans'), taskQueue });
    let processes: number[] = [];
    try {
      await poll(() => existsSync(path.join(ws, 'started')) && processesRunning(['sleep', nap]).length === 2, 30_000);
      processes = processesOf('tree.sh').concat(processesRunning(['sleep', nap]));
      expect(processes.length).toBeGreaterThanOrEqual(3);

      const killedAt = Date.now();
      await kill(worker, 'SIGKILL');
      await poll(() => processesRunning(['sleep', nap]).length === 0 && processesOf('tree.sh').length === 0, 5_000);
      const elapsed = Date.now() - killedAt;
      process.stdout.write(`tool processes (${processes.length}) gone ${elapsed} ms after the worker's SIGKILL\n`);
      expect(elapsed).toBeLessThan(2000);
    } finally {
      // Should the test fail, leave none of the processes it started behind.
      for (const pid of [...processesOf('tree.sh'), ...processesRunning(['sleep', nap])]) process.kill(pid, 'SIGKILL');
      if (worker.exitCode === null && worker.signalCode === null) await kill(worker, 'SIGKILL');
      await client.client.workflow.getHandle(workflowId).terminate('test over');
      await client.close();
    }
  });

  test('in the sandbox, what a command leaves in the background ends with its call', async () => {
    const ws = tempWorkspace();
    const nap = uniqueSleep(30);
    const { runTool } = createActivities();
    await new MockActivityEnvironment().run(runTool, { tool: 'shell', params: { command: `sleep ${nap} >/dev/null 2>&1 &` }, workspace: ws, stepId: 'bg' });
    await untilProcesses(['sleep', nap], (pids) => pids.length === 0, 2_000);
  });

  test('with sandbox: none, a command that finished stands its watchdog down: what it left in the background stays', async () => {
    const ws = tempWorkspace();
    const nap = uniqueSleep(30);
    const { runTool } = createActivities({ sandbox: { ...DEFAULT_PROFILE, mode: 'none' } });
    await new MockActivityEnvironment().run(runTool, { tool: 'shell', params: { command: `sleep ${nap} >/dev/null 2>&1 &` }, workspace: ws, stepId: 'bg' });
    const [background] = await untilProcesses(['sleep', nap], (pids) => pids.length === 1, 5_000);
    try {
      // The watchdog's guard leaves once told "done"; killing the group would have taken the sleep with it.
      await new Promise((r) => setTimeout(r, 300));
      expect(processesRunning(['sleep', nap])).toEqual([background]);
    } finally {
      process.kill(background, 'SIGKILL');
    }
  });
});
