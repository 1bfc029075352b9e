/** This machine's name among cadre's hosts (docs/operations.md, A fleet). */
import os from 'node:os';
import { durationMs, isDuration } from '../plan-format/duration';
import { HOST_NAME } from '../protocol/host-liveness';


/** This machine's name among cadre's hosts: CADRE_HOST, else the machine's own name. */
export function hostName(env: NodeJS.ProcessEnv = process.env): string {
  const name = env.CADRE_HOST || os.hostname();
  if (!HOST_NAME.test(name)) {
    throw new Error(`CADRE_HOST must be 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit (got ${JSON.stringify(name)})`);
  }
  return name;
}

/** CADRE_HOST_LOST_AFTER: how long the runs this host binds wait for a poll of its queue before they call it lost (default 2 minutes). */
export function hostLostAfterMs(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const text = env.CADRE_HOST_LOST_AFTER;
  if (!text) return undefined;
  if (!isDuration(text) || durationMs(text) < 1000) throw new Error(`CADRE_HOST_LOST_AFTER must be a duration of at least 1s, like 60s or 5m (got ${JSON.stringify(text)})`);
  return durationMs(text);
}
