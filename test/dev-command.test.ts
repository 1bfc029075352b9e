import type { ChildProcess } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort } from '../src/worker/ports';
import { runCadre, spawnCadre } from './support/cli';
import { tempWorkspace } from './support/harness';
import { readFileSync, readdirSync } from 'node:fs';
import { until } from './support/until';

/** The `temporal server start-dev` processes serving `port`. */
function devServers(port: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return argv.includes('start-dev') && argv[argv.indexOf('--port') + 1] === String(port) && !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}

function env(): NodeJS.ProcessEnv {
  const copy: NodeJS.ProcessEnv = { ...process.env, CADRE_LOG_LEVEL: 'ERROR' };
  delete copy.TEMPORAL_ADDRESS; // the commands must find `cadre dev` on their own
  return copy;
}

/**
 * Starts `cadre dev` and resolves with its printed gRPC address and Web UI URL once both are up;
 * rejects with all it printed when it exits first or is not up within a minute.
 */
function startDev(cwd: string, port: number, uiPort: number): Promise<{ child: ChildProcess; address: string; ui: string }> {
  const child = spawnCadre(['dev', '--port', String(port), '--ui-port', String(uiPort)], cwd, env());
  let stdout = '';
  let printed = '';
  return new Promise((resolve, reject) => {
    const late = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`cadre dev was not up within 60 s: ${printed}`));
    }, 60_000);
    child.once('exit', (code, signal) => {
      clearTimeout(late);
      reject(new Error(`cadre dev exited early (${code ?? signal}): ${printed}`));
    });
    child.stderr!.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    child.stdout!.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      printed += chunk.toString();
      const address = /Temporal gRPC: (\S+)/.exec(stdout)?.[1];
      const ui = /Web UI:\s+(\S+)/.exec(stdout)?.[1];
      if (address && ui && stdout.includes('Ctrl-C')) {
        clearTimeout(late);
        resolve({ child, address, ui });
      }
    });
  });
}

/** Ctrl-C, and its exit code; one that has exited already gives its code (a failed restart must not hang the test's cleanup). */
function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve, reject) => {
    child.removeAllListeners('exit');
    const late = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error('cadre dev did not stop within 30 s of Ctrl-C'));
    }, 30_000);
    child.once('exit', (code) => {
      clearTimeout(late);
      resolve(code);
    });
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

  test('says so when its server dies, starts it again on the same port and database, and a run under way finishes', async () => {
    const dir = tempWorkspace();
    writeFileSync(path.join(dir, 'plan.yaml'), 'name: dev-killed\nsteps:\n  - { id: first, tool: shell, with: { command: "echo one" } }\n  - { id: nap, dependsOn: [first], tool: sleep, with: { duration: 8s } }\n  - { id: last, dependsOn: [nap], tool: shell, with: { command: "echo two" } }\n');
    const [port, uiPort] = [await freePort(), await freePort()];
    const dev = await startDev(dir, port, uiPort);
    let stderr = '';
    dev.child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      await cadre(['run', 'plan.yaml', '--id', 'dev-killed-1'], dir);
      await until('the run at its sleep', async () => JSON.parse((await cadre(['status', 'dev-killed-1', '--json'], dir)).stdout).steps[1].status === 'running' || undefined, 30_000);
      // The dev server is the `temporal` process listening on the port: kill it as the OOM killer would.
      const server = devServers(port);
      expect(server).toHaveLength(1);
      process.kill(server[0], 'SIGKILL');
      await until('cadre dev saying its server is up again', () => /up again on 127\.0\.0\.1/.test(stderr) || undefined, 60_000);
      expect(stderr).toMatch(/the Temporal dev server stopped \(SIGKILL\)/);
      expect(devServers(port)).toHaveLength(1);
      const result = await cadre(['result', 'dev-killed-1', '--json'], dir);
      expect(JSON.parse(result.stdout)).toMatchObject({ status: 'completed' });
      expect(dev.child.exitCode).toBeNull();
    } finally {
      await stop(dev.child);
    }
  });
});
