/**
 * Runs a prepared sandbox and follows it: output, exit status, kill. The whole sandbox dies with
 * bwrap (its PID namespace goes with its first process), and bwrap dies with the worker
 * (--die-with-parent), so a killed worker leaves nothing running, and nothing a command starts
 * outlives its call, not even what it put in the background on purpose.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import type { Readable } from 'node:stream';
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
  // Descriptors the worker inherited without close-on-exec (from whatever started it) would reach the
  // sandbox: the launcher closes them (bash can name any descriptor; dash only 0-9), or, without
  // bash, each is replaced in the child by a pipe whose other end is closed at once.
  const closing = closingInherited(prepared);
  const leaked = closing ? [] : inheritedDescriptors();
  const stdio: ('ignore' | 'pipe')[] = ['ignore', 'pipe', 'pipe'];
  for (const fd of leaked) {
    while (stdio.length <= fd) stdio.push('ignore');
    stdio[fd] = 'pipe';
  }
  const { file, args } = closing ?? prepared;
  const child = spawn(file, args, { env: prepared.env, stdio, detached: true });
  for (const fd of leaked) (child.stdio[fd] as Readable | null)?.destroy();
  const [stdout, stderr] = [child.stdout!, child.stderr!];
  stdout.on('data', output.stdout);
  stderr.on('data', output.stderr);
  const exited = new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
  const closed = (stream: Readable) => new Promise((resolve) => stream.once('close', resolve));
  return {
    finished: Promise.all([exited, closed(stdout), closed(stderr)]).then(([code]) => code),
    kill() {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    },
  };
}

/**
 * The prepared launcher run by bash, which first closes the descriptors the worker inherited
 * without close-on-exec (bash can name any descriptor; dash only 0-9); undefined when there are
 * none, or no bash. For a process another library spawns (an MCP server), the only way to close them.
 */
export function closingInherited(prepared: Pick<PreparedSandbox, 'file' | 'args'>): { file: string; args: string[] } | undefined {
  const leaked = inheritedDescriptors();
  if (leaked.length === 0 || prepared.file !== '/bin/sh' || prepared.args[0] !== '-c' || !existsSync('/bin/bash')) return undefined;
  return { file: '/bin/bash', args: ['-c', `${leaked.map((fd) => `exec ${fd}>&-`).join('\n')}\n${prepared.args[1]}`, ...prepared.args.slice(2)] };
}

let inherited: number[] | undefined;

/**
 * Descriptors of this process from 3 up without close-on-exec: Node opens its own with it, so these
 * came from whoever started the worker (a shell's, a supervisor's). Found once.
 */
function inheritedDescriptors(): number[] {
  if (inherited) return inherited;
  inherited = [];
  let fds: string[] = [];
  try {
    fds = readdirSync('/proc/self/fd');
  } catch {
    return inherited;
  }
  for (const name of fds) {
    const fd = Number(name);
    if (fd < 3) continue;
    try {
      const flags = /^flags:\s*([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1];
      if (flags !== undefined && (parseInt(flags, 8) & O_CLOEXEC) === 0) inherited.push(fd);
    } catch {
      // closed meanwhile
    }
  }
  return inherited;
}

const O_CLOEXEC = 0o2000000;
