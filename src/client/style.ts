/**
 * Colour for people at a terminal: only on a TTY, never when NO_COLOR is set (https://no-color.org)
 * or TERM is dumb; FORCE_COLOR turns it on for a pipe. Statuses get the colour of their outcome.
 */
export function colourOn(stream: { isTTY?: boolean } = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== '0') return true;
  return Boolean(stream.isTTY) && env.TERM !== 'dumb';
}

const CODES: Record<string, number> = { completed: 32, running: 36, waiting: 33, paused: 33, failed: 31, terminated: 31, timed_out: 31, cancelled: 35, budget_exhausted: 33 };

/** The status word, coloured when `on`. */
export function paintStatus(status: string, on: boolean): string {
  const code = CODES[status];
  return on && code ? `\u001b[${code}m${status}\u001b[39m` : status;
}
