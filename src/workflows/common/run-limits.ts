/**
 * A run's share of Temporal's per-run limits (docs/streaming.md, "What a run can take"): the signals
 * and updates it has taken, counted by its handlers, and its history's events and bytes, which the
 * server tells each workflow task. Past 80% of a limit it warns once, in the worker's log
 * (`CadreLimits`) and in the run's own stream; `over(share)` tells the run when to act (continue as
 * new, stop streaming text) well before any limit. Counts are per run: continue-as-new starts afresh,
 * as Temporal's do.
 */
import type { SignalDefinition, UpdateDefinition } from '@temporalio/common';
import { log, setHandler, workflowInfo } from '@temporalio/workflow';
import { LIMIT_WORDS, type LimitName, type RunLimitValues, runLimits } from '../../plan-format/limits';
import type { RunUsage } from '../../protocol/definitions';

export type { LimitName } from '../../plan-format/limits';
/** Past this share of a limit, the run warns. */
export const WARN_SHARE = 0.8;

export interface LimitWarning {
  limit: LimitName;
  used: number;
  max: number;
  message: string;
}

export class RunLimits {
  /** The limits this run keeps within: Temporal's defaults, or its cluster's lower ones (the run's input). */
  readonly max: RunLimitValues;
  private signals = 0;
  private updates = 0;
  private polls = 0;
  private readonly warned = new Set<LimitName>();

  /**
   * @param given the cluster's limits, when lower than Temporal's defaults.
   * @param onWarning where a warning goes besides the log (the run's stream).
   */
  constructor(
    /** The limits the run was given, to pass on to its children. */
    readonly given: Partial<RunLimitValues> | undefined,
    private readonly onWarning?: (warning: LimitWarning) => void,
  ) {
    this.max = runLimits(given);
  }

  /** A signal this run took (its handlers call this). */
  signal(): void {
    this.signals++;
    this.check();
  }

  /** An update this run accepted; a stream poll is one too, counted apart as well. */
  update(poll = false): void {
    this.updates++;
    if (poll) this.polls++;
    this.check();
  }

  usage(): RunUsage {
    const info = workflowInfo();
    return { signals: this.signals, updates: this.updates, polls: this.polls, events: info.historyLength, bytes: info.historySize, max: { ...this.max } };
  }

  /** The first limit whose use has reached `share` of it, if any. */
  over(share: number): LimitName | undefined {
    const usage = this.usage();
    return (Object.keys(this.max) as LimitName[]).find((name) => usage[name] >= share * this.max[name]);
  }

  /** Warns once for each limit past WARN_SHARE: the worker's log and the run's stream. */
  check(): void {
    const usage = this.usage();
    for (const name of Object.keys(this.max) as LimitName[]) {
      const max = this.max[name];
      if (usage[name] < WARN_SHARE * max || this.warned.has(name)) continue;
      this.warned.add(name);
      const message = `CadreLimits: ${workflowInfo().workflowType} ${workflowInfo().workflowId} has used ${usage[name]} of Temporal's ${max} ${LIMIT_WORDS[name]} a run`;
      log.warn(message, { limit: name, used: usage[name], max });
      this.onWarning?.({ limit: name, used: usage[name], max, message });
    }
  }
}

/** A signal handler whose signals the run counts. */
export function onSignal<Args extends unknown[]>(limits: RunLimits, signal: SignalDefinition<Args>, handler: (...args: Args) => void): void {
  setHandler(signal, (...args: Args) => {
    limits.signal();
    handler(...args);
  });
}

/** An update handler whose accepted updates the run counts (the validator's refusals cost nothing). */
export function onUpdate<Ret, Args extends unknown[]>(
  limits: RunLimits,
  update: UpdateDefinition<Ret, Args>,
  handler: (...args: Args) => Ret | Promise<Ret>,
  options?: { validator?: (...args: Args) => void },
): void {
  setHandler(
    update,
    (...args: Args) => {
      limits.update();
      return handler(...args);
    },
    options,
  );
}
