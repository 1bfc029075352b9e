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

/** A command with a child and a grandchild, each writing its PID down. */
const TREE = `
echo $$ >> pids
sleep 300 &
echo $! >> pids
sh -c 'sleep 300 & echo $! >> pids; wait' &
echo $! >> pids
wait
`;

function readPids(file: string): number[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map(Number) : [];
}

/** /proc/<pid>/stat: "pid (comm) state ppid pgrp ..."; comm may hold spaces, so parse after the last ")". */
function procStat(pid: number): { state: string; pgrp: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const [state, , pgrp] = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state, pgrp: Number(pgrp) };
  } catch {
    return undefined;
  }
}

/** A zombie has died and waits only to be reaped (this machine's PID 1 reaps slowly). */
function alive(pid: number): boolean {
  const stat = procStat(pid);
  return stat !== undefined && stat.state !== 'Z';
}

/** Every live process in a process group. */
function groupMembers(pgrp: number): number[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => procStat(pid)?.pgrp === pgrp && alive(pid));
}

async function poll(test: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const onLinux = existsSync('/proc/self/stat') ? describe : describe.skip;

onLinux('tools die with their worker', () => {
  test('SIGKILL on the worker ends the command, its child and its grandchild within 2 s', async () => {
    const ws = tempWorkspace();
    writeFileSync(path.join(ws, 'tree.sh'), TREE);
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
      const pidsFile = path.join(ws, 'pids');
      await poll(() => readPids(pidsFile).length === 4, 30_000);
      const recorded = readPids(pidsFile);
      // The command's process group: the watchdog that leads it, the command and all it started.
      const group = procStat(recorded[0])!.pgrp;
      processes = [...new Set([...recorded, ...groupMembers(group)])];
      expect(processes.every(alive)).toBe(true);
      expect(processes.length).toBeGreaterThanOrEqual(recorded.length + 1);

      const killedAt = Date.now();
      await kill(worker, 'SIGKILL');
      await poll(() => !processes.some(alive), 5_000);
      const elapsed = Date.now() - killedAt;
      process.stdout.write(`tool processes (${processes.length}) gone ${elapsed} ms after the worker's SIGKILL\n`);
      expect(elapsed).toBeLessThan(2000);
    } finally {
      // Should the test fail, leave none of the processes it started behind.
      for (const pid of processes.filter(alive)) process.kill(pid, 'SIGKILL');
      if (worker.exitCode === null && worker.signalCode === null) await kill(worker, 'SIGKILL');
      await client.client.workflow.getHandle(workflowId).terminate('test over');
      await client.close();
    }
  });

  test('a command that finished stands its watchdog down: what it left running in the background stays', async () => {
    const ws = tempWorkspace();
    const { runTool } = createActivities();
    await new MockActivityEnvironment().run(runTool, { tool: 'shell', params: { command: 'sleep 30 >/dev/null 2>&1 & echo $! > bg' }, workspace: ws, stepId: 'bg' });
    const [background] = readPids(path.join(ws, 'bg'));
    try {
      // The watchdog's guard leaves once told "done"; killing the group would have taken the sleep with it.
      await poll(() => groupMembers(procStat(background)!.pgrp).length === 1, 5_000);
      expect(alive(background)).toBe(true);
    } finally {
      process.kill(background, 'SIGKILL');
    }
  });
});
