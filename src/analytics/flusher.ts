/**
 * Starts the process that takes the embedded database's inbox in (./flusher-main.ts) when parts
 * arrive, and tells the running one of new parts. One at a time per worker; none while idle.
 */
import { type ChildProcess, fork } from 'node:child_process';
import type { Socket } from 'node:net';
import { hasPending } from './spool';

export class InboxFlusher {
  private child?: ChildProcess;

  constructor(
    private readonly dir: string,
    private readonly warn: (message: string) => void,
  ) {}

  nudge(): void {
    // One that is exiting takes nothing more: its exit starts another when parts wait.
    if (this.child?.connected) this.child.send('more', () => undefined);
    else if (!this.child) this.start();
  }

  private start(): void {
    // Forked with this process's flags, so a worker run from TypeScript sources (tsx) runs it too.
    const execArgv = process.execArgv.filter((flag) => !flag.startsWith('--inspect'));
    const child = fork(require.resolve('./flusher-main'), [this.dir], { execArgv, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    this.child = child;
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
    child.on('message', (message: { warn?: string }) => message?.warn && this.warn(message.warn));
    child.on('error', (err) => this.warn(`run analytics: cannot start the database writer: ${err.message}`));
    child.on('exit', (code) => {
      if (this.child === child) this.child = undefined;
      if (code !== 0) this.warn(`run analytics: the database writer exited with ${code}${stderr ? `: ${stderr.trim()}` : ''}`);
      // A part that came as it was exiting: another round (a failing writer waits for the next part).
      else if (hasPending(this.dir)) this.start();
    });
    // A worker that exits does not wait for it (its stderr pipe held the worker up to 20 s): what is left waits in the inbox.
    child.unref();
    child.channel?.unref();
    (child.stderr as Socket | null)?.unref();
  }
}
