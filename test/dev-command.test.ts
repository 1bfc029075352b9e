import type { ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../src/worker/ports';
import { runCadre, spawnCadre } from './support/cli';
import { tempWorkspace } from './support/harness';

function env(): NodeJS.ProcessEnv {
  const copy: NodeJS.ProcessEnv = { ...process.env, CADRE_LOG_LEVEL: 'ERROR' };
  delete copy.TEMPORAL_ADDRESS; // the commands must find `cadre dev` on their own
  return copy;
}

/** Starts `cadre dev` and resolves with its printed gRPC address and Web UI URL once both are up. */
function startDev(cwd: string, port: number, uiPort: number): Promise<{ child: ChildProcess; address: string; ui: string }> {
  const child = spawnCadre(['dev', '--port', String(port), '--ui-port', String(uiPort)], cwd, env());
  let stdout = '';
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`cadre dev exited early (${code}): ${stdout}`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const address = /Temporal gRPC: (\S+)/.exec(stdout)?.[1];
      const ui = /Web UI:\s+(\S+)/.exec(stdout)?.[1];
      if (address && ui && stdout.includes('Ctrl-C')) resolve({ child, address, ui });
    });
  });
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.removeAllListeners('exit');
    child.once('exit', (code) => resolve(code));
    child.kill('SIGINT');
  });
}

async function cadre(args: string[], cwd: string) {
  const result = await runCadre(args, cwd, env());
  if (result.code !== 0) throw new Error(`cadre ${args.join(' ')} failed: ${result.stderr}`);
  return result;
}

describe('cadre dev', () => {
  test('serves gRPC and the Web UI, is found by other commands, stops on Ctrl-C, and keeps runs across a restart', async () => {
    const dir = tempWorkspace();
    writeFileSync(path.join(dir, 'plan.yaml'), 'name: dev-check\nsteps:\n  - { id: hello, tool: shell, with: { command: "echo hello" } }\noutput: "{{ steps.hello.output.stdout }}"\n');
    const [port, uiPort] = [await freePort(), await freePort()];
    let dev = await startDev(dir, port, uiPort);
    try {
      expect(dev.address).toBe(`127.0.0.1:${port}`);
      expect((await fetch(dev.ui)).status).toBe(200);
      expect(existsSync(path.join(dir, '.cadre', 'temporal.db'))).toBe(true);
      const second = await runCadre(['dev'], dir, env());
      expect(second).toMatchObject({ code: 1, stderr: expect.stringContaining('cadre dev already runs here') });

      const run = await cadre(['run', 'plan.yaml', '--wait', '--id', 'dev-check-1'], dir);
      expect(run.stderr).toContain(`Web UI: ${dev.ui}/namespaces/default/workflows/dev-check-1`);
      expect(run.stdout).toContain('dev-check (dev-check-1): completed');

      expect(await stop(dev.child)).toBe(0);
      expect(existsSync(path.join(dir, '.cadre', 'server.json'))).toBe(false);
      await expect(fetch(dev.ui)).rejects.toThrow();

      dev = await startDev(dir, port, uiPort);
      const status = await cadre(['status', 'dev-check-1', '--json'], dir);
      expect(JSON.parse(status.stdout)).toMatchObject({ plan: 'dev-check', status: 'completed', output: 'hello\n' });
    } finally {
      await stop(dev.child);
    }
  });
});
