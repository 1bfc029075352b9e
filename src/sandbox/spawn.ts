/**
 * Runs a prepared sandbox and follows it: output, exit status, kill. The whole sandbox dies with
 * bwrap (its PID namespace goes with its first process), and bwrap dies with the worker
 * (--die-with-parent), so a killed worker leaves nothing running, and nothing a command starts
 * outlives its call, not even what it put in the background on purpose.
 */
import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import type { PreparedSandbox } from './executor';

export interface SandboxedProcess {
  /** The exit status (128+n for signal n) once the sandbox is gone and its output closed. */
  readonly finished: Promise<number>;
  /** SIGKILLs the sandbox: bwrap, and with it every process inside. */
  kill(): void;
}

export interface OutputReceivers {
  stdout: (chunk: Buffer) => void;
  stderr: (chunk: Buffer) => void;
}

export function spawnSandboxed(prepared: PreparedSandbox, output: OutputReceivers): SandboxedProcess {
  const child = spawn(prepared.file, prepared.args, {
    env: prepared.env,
    // fd 3: the hand-shake; the process waits on it until it is in its cgroup.
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    detached: true,
  });
  const [stdout, stderr, handshake] = [child.stdout!, child.stderr!, child.stdio[3] as Writable];
  stdout.on('data', output.stdout);
  stderr.on('data', output.stderr);
  handshake.on('error', () => undefined);
  const exited = new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
  if (child.pid !== undefined) void prepared.started(child.pid, () => handshake.end('go\n'));
  const closed = (stream: Readable) => new Promise((resolve) => stream.once('close', resolve));
  return {
    finished: Promise.all([exited, closed(stdout), closed(stderr)]).then(([code]) => code),
    kill() {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      handshake.destroy();
    },
  };
}
