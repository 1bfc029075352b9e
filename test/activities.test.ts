import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, type ToolFailureDetails, type ToolResult } from '../src/activities';
import { spawnTied } from '../src/activities/tools/tied-process';
import { tempWorkspace } from './support/harness';

const { runTool } = createActivities();
/** These tests fail activities on purpose; the SDK would log each failure as a warning. */
const quiet = { logger: new DefaultLogger('ERROR') };

async function waitFor(test: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 50));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('the runTool activity', () => {
  test('heartbeats while a command runs, and cancellation kills the whole command', async () => {
    const ws = tempWorkspace();
    const env = new MockActivityEnvironment(undefined, quiet);
    let heartbeats = 0;
    env.on('heartbeat', () => heartbeats++);
    const running = env.run(runTool, { tool: 'shell', params: { command: 'sleep 30 & echo $! > child; wait' }, workspace: ws, stepId: 's' });
    const childFile = path.join(ws, 'child');
    await waitFor(() => {
      try {
        return readFileSync(childFile, 'utf8').trim() !== '';
      } catch {
        return false;
      }
    });
    const child = Number(readFileSync(childFile, 'utf8'));
    await waitFor(() => heartbeats >= 1, 3000);
    env.cancel();
    await expect(running).rejects.toBeInstanceOf(CancelledFailure);
    await waitFor(() => !alive(child));
  });

  test('a failure carries its type, retryability and the attempt number', async () => {
    const ws = tempWorkspace();
    const env = new MockActivityEnvironment({ attempt: 4 }, quiet);
    const err: ApplicationFailure = await env.run(runTool, { tool: 'shell', params: { command: 'echo out; echo oops >&2; exit 7' }, workspace: ws, stepId: 's' }).then(
      () => { throw new Error('expected a failure'); },
      (e: ApplicationFailure) => e,
    );
    expect(err).toBeInstanceOf(ApplicationFailure);
    expect(err).toMatchObject({ type: 'ShellExit', nonRetryable: false, message: 'command exited with code 7: oops' });
    const details = err.details?.[0] as ToolFailureDetails;
    expect(details).toMatchObject({ attempt: 4, output: { exitCode: 7, stdout: 'out\n', stderr: 'oops\n' } });
  });

  test('bad parameters and a missing workspace are permanent', async () => {
    const env = new MockActivityEnvironment(undefined, quiet);
    await expect(env.run(runTool, { tool: 'shell', params: { cmd: 'x' }, workspace: tempWorkspace(), stepId: 's' })).rejects.toMatchObject({
      type: 'BadToolInput',
      nonRetryable: true,
    });
    await expect(env.run(runTool, { tool: 'shell', params: { command: 'true' }, workspace: '/nonexistent/ws', stepId: 's' })).rejects.toMatchObject({
      type: 'WorkspaceMissing',
      nonRetryable: true,
      message: expect.stringContaining('workspace /nonexistent/ws is not a directory'),
    });
  });

  test('fs.read refuses files too big to be a step output', async () => {
    const ws = tempWorkspace();
    writeFileSync(path.join(ws, 'big.bin'), Buffer.alloc(1024 * 1024 + 1));
    const env = new MockActivityEnvironment(undefined, quiet);
    await expect(env.run(runTool, { tool: 'fs.read', params: { path: 'big.bin' }, workspace: ws, stepId: 's' })).rejects.toMatchObject({
      type: 'TooLarge',
      nonRetryable: true,
    });
  });

  test('shell output keeps stdout as JSON when it is JSON, and caps long streams', async () => {
    const ws = tempWorkspace();
    const env = new MockActivityEnvironment(undefined, quiet);
    const json: ToolResult = await env.run(runTool, { tool: 'shell', params: { command: 'echo \'{"a": [1]}\'' }, workspace: ws, stepId: 's' });
    expect(json.output).toEqual({ exitCode: 0, stdout: '{"a": [1]}\n', stderr: '', json: { a: [1] } });
    const big: ToolResult = await env.run(runTool, { tool: 'shell', params: { command: 'head -c 300000 /dev/zero | tr "\\0" x' }, workspace: ws, stepId: 's' });
    const stdout = (big.output as { stdout: string }).stdout;
    expect(stdout.startsWith('x'.repeat(1000))).toBe(true);
    expect(stdout).toContain('[cadre: 37856 more bytes not kept]');
  });

  test('output of a command that exits before anyone waits for it is kept', async () => {
    const out: Buffer[] = [];
    const tool = spawnTied('echo early', { cwd: tempWorkspace(), env: process.env, stdout: (chunk) => out.push(chunk), stderr: () => undefined });
    // Node drops the output of an exited child that nobody listens to: receivers are attached at spawn.
    await new Promise((r) => setTimeout(r, 300));
    expect(await tool.finished).toBe(0);
    tool.release();
    expect(Buffer.concat(out).toString()).toBe('early\n');
  });
});
