import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { createActivities, type ToolFailureDetails, type ToolResult } from '../src/activities';
import type { ShellOutput } from '../src/activities/tools/shell';
import { CappedBytes } from '../src/activities/tools/capped';
import { spawnTied } from '../src/processes/tied-process';
import { tempWorkspace } from './support/harness';
import { processesRunning, uniqueSleep } from './support/processes';

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

describe('the runTool activity', () => {
  test('heartbeats while a command runs, and cancellation kills the whole command', async () => {
    const ws = tempWorkspace();
    const env = new MockActivityEnvironment(undefined, quiet);
    let heartbeats = 0;
    env.on('heartbeat', () => heartbeats++);
    // A sleep no other process has: the command runs in its own PID namespace, so it is found by its arguments.
    const marker = uniqueSleep(30);
    const running = env.run(runTool, { tool: 'shell', params: { command: `sleep ${marker} & wait` }, workspace: ws, stepId: 's' });
    await waitFor(() => processesRunning(['sleep', marker]).length > 0);
    await waitFor(() => heartbeats >= 1, 3000);
    env.cancel();
    await expect(running).rejects.toBeInstanceOf(CancelledFailure);
    await waitFor(() => processesRunning(['sleep', marker]).length === 0);
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
    // Valid JSON padded past the cap: the kept part parses too, but cut output is never parsed.
    const command = 'printf \'{"a": 1}\'; head -c 300000 /dev/zero | tr "\\0" " "; head -c 270000 /dev/zero | tr "\\0" e >&2';
    const result: ToolResult = await env.run(runTool, { tool: 'shell', params: { command }, workspace: ws, stepId: 's' });
    const big = result.output as ShellOutput;
    expect(big.stdout.startsWith('{"a": 1}   ')).toBe(true);
    expect([big.stdout.length, big.stderr.length]).toEqual([256 * 1024, 256 * 1024]);
    expect(big).toMatchObject({ exitCode: 0, truncated: true, droppedBytes: { stdout: 300008 - 256 * 1024, stderr: 270000 - 256 * 1024 } });
    expect(big).not.toHaveProperty('json');
    expect(big.stdout).not.toContain('cadre');
  });

  test('http bodies are kept up to 512 KiB, and a cut body says so and is not parsed', async () => {
    const body = `{"a": 1}${' '.repeat(600 * 1024)}`;
    const server = createServer((req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(req.url === '/small' ? '{"a": 1}' : body));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const url = `http://127.0.0.1:${port}`;
    // The test's server is on this machine: the run opens exactly its port.
    const sandbox = { egress: { allow: [], loopback: [port], addresses: [] } };
    try {
      const env = new MockActivityEnvironment(undefined, quiet);
      const small: ToolResult = await env.run(runTool, { tool: 'http.request', params: { url: `${url}/small` }, workspace: tempWorkspace(), stepId: 's', sandbox });
      expect(small.output).toMatchObject({ status: 200, body: '{"a": 1}', json: { a: 1 } });
      expect(small.output).not.toHaveProperty('truncated');
      const cut: ToolResult = await env.run(runTool, { tool: 'http.request', params: { url: `${url}/big` }, workspace: tempWorkspace(), stepId: 's', sandbox });
      const out = cut.output as { body: string };
      expect(out).toMatchObject({ status: 200, truncated: true, droppedBytes: { body: body.length - 512 * 1024 } });
      expect(out.body).toBe(body.slice(0, 512 * 1024));
      expect(out).not.toHaveProperty('json');
    } finally {
      server.close();
    }
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

  test('a cut output ends on a whole character and counts the cut one as dropped', () => {
    const capped = new CappedBytes(8);
    capped.push(Buffer.from('abcdefg')); // 7 bytes, then a 2-byte character across the cap
    capped.push(Buffer.from('éz'));
    expect(capped.finish()).toEqual({ text: 'abcdefg', dropped: 3 });
    const whole = new CappedBytes(8);
    whole.push(Buffer.from('abcdef'));
    whole.push(Buffer.from('é'));
    expect(whole.finish()).toEqual({ text: 'abcdefé', dropped: 0 });
  });
});
