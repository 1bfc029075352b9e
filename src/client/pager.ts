/**
 * Long output on a terminal goes through the user's pager (`$PAGER`, else `less -FRX`), so a long
 * command waiting for approval is read whole, not scrolled past. Pipes and short output print as they are.
 */
import { spawn } from 'node:child_process';

export async function printPaged(text: string, write: (text: string) => void): Promise<void> {
  const rows = process.stdout.rows ?? 0;
  if (!process.stdout.isTTY || rows === 0 || text.split('\n').length < rows - 1) return write(text);
  const pager = process.env.PAGER?.trim() || 'less -FRX';
  const shown = await new Promise<boolean>((resolve) => {
    const child = spawn('/bin/sh', ['-c', pager], { stdio: ['pipe', 'inherit', 'inherit'] });
    child.once('error', () => resolve(false));
    child.once('exit', (code) => resolve(code === 0));
    child.stdin.on('error', () => undefined);
    child.stdin.end(`${text}\n`);
  });
  if (!shown) write(text);
}
