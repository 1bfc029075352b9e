/** What the `cadre` commands share: where they print, how they parse arguments, connect and follow a run. */
import { InvalidArgumentError } from 'commander';
import type { CadreClient } from '../client';
import { ProgressPrinter } from '../format';
import { isFinal } from '../run-status';
import { etaReporter } from '../stats-command';
import { checkWorkflowId } from '../workflow-ids';
import type { Diagnostics } from '../../protocol/definitions';

export const out = (line: string) => process.stdout.write(`${line}\n`);
export const info = (line: string) => process.stderr.write(`${line}\n`);

export function collectInput(value: string, previous: Record<string, string>): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError(`expected name=value, got "${value}"`);
  return { ...previous, [value.slice(0, eq)]: value.slice(eq + 1) };
}

export function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0 || n > 65535) throw new InvalidArgumentError(`not a port: ${value}`);
  return n;
}

export function commaList(value: string): string[] {
  return value.split(',').map((v) => v.trim()).filter(Boolean);
}

export function positive(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError(`not a positive whole number: ${value}`);
  return n;
}

export function offset(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError(`not an offset (a whole number, 0 or more): ${value}`);
  return n;
}

export async function withClient<T>(fn: (client: CadreClient) => Promise<T>): Promise<T> {
  // The client (and Temporal's) loads only in commands that connect: `cadre --version` starts fast.
  const { CadreClient } = await import('../client');
  const client = await CadreClient.connect();
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

/** Commands about one run check its id first: a bad id is the user's to fix, whatever the server. */
export async function withRun<T>(id: string, fn: (client: CadreClient) => Promise<T>): Promise<T> {
  checkWorkflowId(id);
  return withClient(fn);
}

/** 1 for a run that ended without completing (failed, cancelled, terminated, timed out), else 0. */
export function exitCodeOf(status: string): number {
  return isFinal(status) && status !== 'completed' ? 1 : 0;
}

/** Ctrl-C while following a run stops the following, not the run. */
export function leaveRunOnCtrlC(workflowId: string): void {
  process.once('SIGINT', () => {
    info(`\nstopped following; the run goes on (cadre watch ${workflowId}, cadre cancel ${workflowId})`);
    process.exit(130);
  });
}

/** Resolves on Ctrl-C or SIGTERM. */
export function untilSignal(): Promise<string> {
  return new Promise((resolve) => {
    const onSignal = (signal: string) => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      resolve(signal);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

/** Follows a run to its end: its progress and, once, its ETA; or each change to `instead` (--json). */
export async function follow(client: CadreClient, workflowId: string, write: (line: string) => void, instead?: (d: Diagnostics) => void): Promise<Diagnostics> {
  const printer = new ProgressPrinter(workflowId, write);
  const eta = etaReporter(write);
  const final = await client.watch(workflowId, (d) => {
    if (instead) return instead(d);
    printer.update(d);
    eta.seen(d);
  });
  await eta.done();
  return final;
}
