/**
 * How much text an agent's (or a session's) next model turn may stream, so streaming never takes
 * the signals and history its workflow needs for what controls it (docs/streaming.md). No cap while
 * its limits are far; once fewer batches are left before half of its signals than a long turn
 * sends, those; none, for good, once half of any of its limits is used, which the stream says once
 * (`stream_shed`). Turns' ends, tool calls and results still show: the workflow publishes them.
 */
import { LIMIT_WORDS } from '../../plan-format/limits';
import type { RunLimits } from '../common/run-limits';

/** Streaming stops at this share of any limit: the other half stays for control. */
export const SHED_SHARE = 0.5;
/** More batches than one turn sends in hours (about 220 an hour, and 16 for each 256 K of text): no cap needed. */
const UNCAPPED = 1000;
/** Fewer batches left than this show nothing of a turn (one is kept for its end): the stream sheds instead. */
const MIN_TURN_BATCHES = 3;

export class StreamBudget {
  private shed = false;

  constructor(
    private readonly limits: RunLimits,
    private readonly onShed: (reason: string) => void,
  ) {}

  /** Batches the next turn may stream: undefined for no cap, 0 for none. */
  nextTurn(): number | undefined {
    if (this.shed) return 0;
    const left = Math.floor(SHED_SHARE * this.limits.max.signals) - this.limits.usage().signals;
    // Too few batches left for a turn's text to show: shed now, and say so, rather than cut turns short unsaid.
    const over = this.limits.over(SHED_SHARE) ?? (left < MIN_TURN_BATCHES ? 'signals' : undefined);
    if (over !== undefined) {
      this.shed = true;
      const used = this.limits.usage()[over];
      this.onShed(`this workflow has used ${used} of Temporal's ${this.limits.max[over]} ${LIMIT_WORDS[over]} a run: from here on its turns' text is not streamed (their tool calls, results and ends still are, and every answer is whole in the run)`);
      return 0;
    }
    return left < UNCAPPED ? left : undefined;
  }
}
