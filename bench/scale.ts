/**
 * How big a benchmark runs. CI runs every benchmark at a scale its share of the 12-minute budget on two cores
 * allows, and says so in its report; `CADRE_BENCH=full npm run bench` runs the sizes docs/benchmarks.md quotes
 * as full scale (the 50,000-item forEach, 1,000-message sessions, ...).
 */
export const BENCH_SCALE: 'ci' | 'full' = process.env.CADRE_BENCH === 'full' ? 'full' : 'ci';

export function scaled(full: number, ci: number): number {
  return BENCH_SCALE === 'full' ? full : ci;
}
