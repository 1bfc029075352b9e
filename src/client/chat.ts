/**
 * `cadre chat`: an interactive conversation with a session (readline). Each line is a message;
 * `/status` shows the session, `/end` ends it, Ctrl-D leaves it running to come back to.
 */
import { describeSpend } from '../protocol/budget';
import { createInterface } from 'node:readline/promises';
import type { SessionInput } from '../protocol/session';
import type { CadreClient } from './client';
import { endSession, printReply, sessionDiagnostics } from './sessions';

export interface ChatIo {
  input: NodeJS.ReadableStream;
  out: (line: string) => void;
  /** Replies as they are written (no newline added). */
  write: (text: string) => void;
  info: (line: string) => void;
}

export async function chat(client: CadreClient, sessionId: string, start: SessionInput, io: ChatIo): Promise<void> {
  io.info(`session ${sessionId}: type a message; /status, /end, or Ctrl-D to leave it running (come back with: cadre chat ${sessionId})`);
  const rl = createInterface({ input: io.input, terminal: false });
  try {
    for await (const raw of rl) {
      const line = raw.trim();
      if (line === '') continue;
      if (line === '/end') {
        await endSession(client, sessionId);
        io.info(`ended ${sessionId}`);
        return;
      }
      if (line === '/status') {
        const d = await sessionDiagnostics(client, sessionId);
        const budget = d.budget ? `; budget: ${describeSpend(d.budget.limits, d.budget.spent)}` : '';
        const host = d.host ? `; on host ${d.host}${d.waiting.some((w) => w.kind === 'host') ? ', unreachable' : ''}` : '';
        io.out(`${d.answered} answered, ${d.inContext} in context (${d.summarised} summarised, ${d.dropped} dropped), run ${d.run}, ${d.turns} model turns, ${d.toolCalls} tool calls${budget}${host}`);
        continue;
      }
      try {
        await printReply(client, sessionId, raw, start, io.write);
      } catch (err) {
        io.info(`error: ${(err as Error).message}`);
      }
    }
    io.info(`left ${sessionId} running; continue with: cadre chat ${sessionId}`);
  } finally {
    rl.close();
  }
}
