/** This machine's name among cadre's hosts (docs/operations.md, A fleet). */
import os from 'node:os';

/** What a host name may hold: it is part of a task queue's name and of a search attribute's value. */
const HOST_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

/** This machine's name among cadre's hosts: CADRE_HOST, else the machine's own name. */
export function hostName(env: NodeJS.ProcessEnv = process.env): string {
  const name = env.CADRE_HOST || os.hostname();
  if (!HOST_NAME.test(name)) {
    throw new Error(`CADRE_HOST must be 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit (got ${JSON.stringify(name)})`);
  }
  return name;
}
