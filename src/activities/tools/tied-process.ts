/**
 * Shell commands whose whole process tree dies with the worker that started them.
 *
 * A command runs under a small `/bin/sh` watchdog that leads a process group of its own (so
 * cancellation can SIGKILL the whole tree at once) and holds one end of a pipe, its fd 3, whose
 * other end only this worker holds. However the worker dies, SIGKILL included, the kernel closes
 * that end: the watchdog reads EOF and SIGKILLs its process group, the command and everything it
 * started, within milliseconds. When the command has finished (exited, and its output closed),
 * the worker writes "done" first, so background processes a command deliberately leaves running
 * outlive the step, as they always did.
 *
 * Not covered: a process that leaves the group on purpose (`setsid`, `setpgid`, a daemon's
 * double fork) is out of reach of any process-group kill, this one included.
 */
import { spawn } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

const WATCHDOG = `
/bin/sh -c "$1" 3<&- &
command=$!
{ read -r word <&3; [ "$word" = done ] || kill -s KILL 0; } >/dev/null 2>&1 &
exec 3<&-
wait "$command"
`;
// Line by line: the command runs without the lifeline (fd 3); a guard in the background waits on
// the lifeline and, on EOF without "done", kills the process group, itself included; the watchdog
// exits with the command's status (128+n for signal n).

/** `argv` of the watchdog before the command, for size checks. */
export const WATCHDOG_ARGS = ['/bin/sh', '-c', WATCHDOG, 'cadre-watchdog'] as const;

export interface TiedOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** Output receivers, attached at spawn: Node discards output nobody listens to once the process exits. */
  stdout: (chunk: Buffer) => void;
  stderr: (chunk: Buffer) => void;
}

export interface TiedProcess {
  /** The command's exit status, once it exited and its output closed. Rejects as `spawn` does (EAGAIN...). */
  readonly finished: Promise<number>;
  /** SIGKILLs the command's whole process group (cancellation). */
  killTree(): void;
  /** Stands the watchdog down after the command finished, leaving what it left running alone. */
  release(): void;
}

/** Starts `command` under the watchdog; throws as `spawn` does (E2BIG for a too-big environment). */
export function spawnTied(command: string, options: TiedOptions): TiedProcess {
  const [file, ...args] = WATCHDOG_ARGS;
  const child = spawn(file, [...args, command], {
    cwd: options.cwd,
    env: options.env,
    // Not stdin for the lifeline: Node closes a child's stdin as soon as it exits, before "done" could be said.
    stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    detached: true, // a process group (and session) of its own, out of reach of a terminal's Ctrl-C
  });
  const [stdout, stderr, lifeline] = [child.stdout!, child.stderr!, child.stdio[3] as Writable];
  stdout.on('data', options.stdout);
  stderr.on('data', options.stderr);
  // The watchdog may be gone before "done" is written (killed by cancellation): not an error.
  lifeline.on('error', () => undefined);
  const exited = new Promise<number>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
  // Not the child's 'close' event: that one also waits for the lifeline, which stays open until release().
  const closed = (stream: Readable) => new Promise((resolve) => stream.once('close', resolve));
  return {
    finished: Promise.all([exited, closed(stdout), closed(stderr)]).then(([code]) => code),
    killTree() {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      lifeline.destroy();
    },
    release() {
      lifeline.end('done\n');
    },
  };
}
