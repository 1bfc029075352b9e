/**
 * `CADRE_RUN_LIMITS`: a cluster's per-run limits, when lower than Temporal's defaults
 * (`signals=1000,updates=500,events=20000,bytes=20000000`). A run is given them in its input, so
 * it keeps within what its server really takes (docs/streaming.md, "What a run can take").
 */
import { LIMIT_WORDS, type LimitName, type RunLimitValues } from '../plan-format/limits';
import { UsageError } from '../errors/cadre-error';

export function runLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): Partial<RunLimitValues> | undefined {
  const text = env.CADRE_RUN_LIMITS?.trim();
  if (!text) return undefined;
  const limits: Partial<RunLimitValues> = {};
  for (const part of text.split(',')) {
    const [name, value] = part.split('=').map((s) => s.trim());
    const n = Number(value);
    if (!(name in LIMIT_WORDS) || !Number.isInteger(n) || n < 1) {
      throw new UsageError(`CADRE_RUN_LIMITS: "${part}" is not <limit>=<whole number above 0> (limits: ${Object.keys(LIMIT_WORDS).join(', ')})`);
    }
    limits[name as LimitName] = n;
  }
  return limits;
}
