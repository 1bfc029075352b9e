/** Polls `probe` until it gives a value (not undefined), and returns it; fails naming `what` after `timeoutMs`. */
export async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 60_000, intervalMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000}s`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** The pause between probes that start a `cadre` process: each costs 0.4 s of CPU or more (1 s with the analytics database), which a loaded machine's other tests need. */
export const CLI_POLL_MS = 1000;

/** `promise`, or a rejection naming `what` if it has not settled within `timeoutMs`. */
export async function within<T>(what: string, promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${timeoutMs / 1000}s`)), timeoutMs)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
