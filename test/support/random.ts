/** A seeded random source for fault tests: the same seed, the same corpus or schedule, never Math.random. */

/** mulberry32: small, fast and good enough to pick mutations and kill times. */
export function prng(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)];
  /** A number in [low, high). */
  const between = (low: number, high: number) => low + next() * (high - low);
  return { next, int, pick, between, chance: (p: number) => next() < p };
}

export type Random = ReturnType<typeof prng>;

/** The seed a fault test uses: CADRE_FAULT_SEED when set (to repeat a failure), else the test's own. */
export function faultSeed(fallback: number): number {
  const given = Number(process.env.CADRE_FAULT_SEED);
  return Number.isInteger(given) ? given : fallback;
}
