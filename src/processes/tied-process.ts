/**
 * Shell commands whose whole process tree dies with the worker that started them.
 *
 * A command runs in a process group of its own (so cancellation can SIGKILL the whole tree at
 * once), started by a small `/bin/sh` watchdog that leaves a guard in the group holding one end of
 * a pipe, its fd 3, whose other end only this worker holds. However the worker dies, SIGKILL
 * included, the kernel closes that end: the guard reads EOF and SIGKILLs its process group, the
 * command and everything it started, within milliseconds. When the command has finished (exited,
 * and its output closed), the worker writes "done" first, so background processes a command
 * deliberately leaves running outlive the step, as they always did.
 *
 * cadre's own git runs under the same watchdog (see tiedGit below), started by simple-git.
 *
 * Not covered: a process that leaves the group on purpose (`setsid`, `setpgid`, a daemon's
 * double fork) is out of reach of any process-group kill, this one included.
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { packageRoot } from '../package-root';

/** Becomes the program its arguments name ("$@"), leaving a guard behind on the lifeline, fd 3. */
export const WATCHDOG = `
{ read -r word <&3; [ "$word" = done ] || kill -s KILL 0; } >/dev/null 2>&1 &
exec "$@" 3<&-
`;
// Line by line: a guard in the background waits on the lifeline and, on EOF without "done", kills
// the process group, itself included; the watchdog then becomes the program (same process, so its
// exit status is the program's), without the lifeline.

/** `argv` of the watchdog before a shell command, for size checks: the command runs as `/bin/sh -c <command>`. */
export const WATCHDOG_ARGS = ['/bin/sh', '-c', WATCHDOG, 'cadre-watchdog', '/bin/sh', '-c'] as const;

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

/** Starts the shell command `command` under the watchdog; throws as `spawn` does (E2BIG for a too-big environment). */
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
    // A shell's way to say "killed by signal n": 128+n.
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : 1)));
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

/**
 * How simple-git starts cadre's own git so that git, and whatever git starts, die with the worker.
 * simple-git spawns a program of our choosing with one argument before git's (its "custom binary"),
 * but no other spawn option: no process group, no fd 3. So `setsid` makes the group (git's
 * program becomes a session and group leader: simple-git's child never leads a group, so setsid
 * runs it in place, with no fork), and bin/cadre-git moves the lifeline from stdin, which simple-git
 * leaves open, written by no one, until git exits, to fd 3, and runs git under WATCHDOG (passed in
 * CADRE_WATCHDOG). Once git has exited, Node closes its stdin: the guard kills what git left
 * running in its group, as when the worker dies.
 */
export function tiedGit(): { binary: [string, string]; env: Record<string, string> } {
  launcher ??= path.join(packageRoot(), 'bin', 'cadre-git');
  return { binary: ['setsid', launcher], env: { CADRE_WATCHDOG: WATCHDOG } };
}

let launcher: string | undefined;
