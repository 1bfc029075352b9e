import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';

/**
 * Ties a server child process and its folder to the test process: the returned stop() sends
 * `signal` (SIGKILL after `graceMs`) and deletes the folder; a test process that exits without
 * calling it (a timeout, jest's forceExit) takes both with it.
 */
export function ownedProcess(child: ChildProcess, root: string, signal: NodeJS.Signals, graceMs: number): () => Promise<void> {
  const exit = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const onExit = () => {
    child.kill('SIGKILL');
    rmSync(root, { recursive: true, force: true });
  };
  process.once('exit', onExit);
  let stopped = false;
  return async () => {
    if (stopped) return;
    stopped = true;
    process.removeListener('exit', onExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(signal);
      const killed = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exit;
      clearTimeout(killed);
    }
    rmSync(root, { recursive: true, force: true });
  };
}
