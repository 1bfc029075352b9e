/**
 * cadre's reading of git's errors: a lock left by another git process is worth a retry; anything
 * else git refuses is permanent and says what was being done.
 */
import { ErrorTypes, permanent, transient } from '../errors/application-failures';

export function gitFailure(err: unknown, doing: string) {
  const message = (err instanceof Error ? err.message : String(err)).trim().split('\n').slice(0, 6).join('; ');
  // git 2.39's merge says only "Unable to write index" when another process holds index.lock.
  if (/index\.lock|Unable to create .*\.lock|could not lock|Unable to write (new )?index/i.test(message)) {
    return transient(ErrorTypes.GitBusy, `${doing}: another git process holds a lock (${message})`);
  }
  return permanent(ErrorTypes.GitFailed, `${doing}: ${message}`);
}
